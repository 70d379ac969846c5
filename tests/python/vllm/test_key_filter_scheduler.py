"""The scheduler side with tempokvd's filter of stored keys (vLLM's real Scheduler, a real
tempokvd): a request whose first chunk is not stored is answered 0 in the same call, without a
lookup round trip, and still reported to the daemon; a stored prefix still loads; after a
daemon is killed and another one serves, the dead one's filter is not used."""

import pytest

pytest.importorskip("vllm")
pytest.importorskip("torch")

import time  # noqa: E402

from test_scheduler import CHUNK, make_scheduler, request, store_chunks  # noqa: E402,I100
from tempokv import TempoKVClient  # noqa: E402
from tempokv.keys import chunk_keys  # noqa: E402


class CountingLookups:
    """Wraps the agent's client's lookup: how many went to the daemon."""

    def __init__(self, agent):
        self.calls = 0
        client = agent._client
        inner = client.lookup

        def lookup(*a, **kw):
            self.calls += 1
            return inner(*a, **kw)
        client.lookup = lookup


def connected(conn):
    assert conn.agent.flush()
    assert conn.agent.key_filter is not None, "the agent mapped the daemon's key filter"


def test_a_miss_is_answered_at_once_without_a_lookup_and_still_reported(model_dir, daemon):
    s = make_scheduler(model_dir, daemon.endpoint)
    conn = s.connector
    connected(conn)
    lookups = CountingLookups(conn.agent)
    tokens = list(range(500, 500 + 3 * CHUNK + 5))
    s.add_request(request("m", tokens, max_tokens=1))
    # The same call, no step in between: (0, False), never (None, False).
    assert conn.get_num_new_matched_tokens(s.requests["m"], 0) == (0, False)
    assert conn._sched.filtered_misses == 1
    out = s.schedule()
    assert out.kv_connector_metadata.loads == []
    assert out.num_scheduled_tokens == {"m": len(tokens)}
    assert conn.agent.flush()
    assert lookups.calls == 0
    with TempoKVClient(daemon.endpoint, name="probe", map_shared_memory=False) as probe:
        assert probe.stats().get("requests_total", 0) >= 1, "the daemon was told of it"
    conn.shutdown()


def test_a_stored_prefix_still_loads(model_dir, daemon):
    s = make_scheduler(model_dir, daemon.endpoint)
    conn = s.connector
    connected(conn)
    tokens = list(range(700, 700 + 3 * CHUNK + 5))
    keys = chunk_keys(conn.model_id, tokens, CHUNK)
    store_chunks(daemon.endpoint, keys[:2])
    s.add_request(request("h", tokens))
    assert conn.agent.flush()
    assert conn.get_num_new_matched_tokens(s.requests["h"], 0) == (2 * CHUNK, True)
    assert conn._sched.filtered_misses == 0
    out = s.schedule()
    assert len(out.kv_connector_metadata.loads) == 1
    conn.shutdown()


def test_a_killed_daemons_filter_is_not_used_once_another_serves(model_dir, daemon):
    s = make_scheduler(model_dir, daemon.endpoint)
    conn = s.connector
    connected(conn)
    old = conn.agent.key_filter
    first = conn.agent.daemon_instance
    daemon.kill()  # SIGKILL: its filter stays live, frozen
    daemon.restart()  # another instance on the same store
    tokens = list(range(900, 900 + 3 * CHUNK + 5))
    keys = chunk_keys(conn.model_id, tokens, CHUNK)
    store_chunks(daemon.endpoint, keys[:2])
    assert old.live() and not old.may_hold(keys[0]), "the stale filter would say: a miss"
    deadline = time.monotonic() + 10  # the agent reconnects within its 1 s back-off
    while conn.agent.daemon_instance in (None, first) and time.monotonic() < deadline:
        conn.agent.flush()
        time.sleep(0.1)
    now = conn.agent.daemon_instance
    assert now not in (None, first)
    assert not old.usable(now)
    assert conn.agent.key_filter is not old and conn.agent.key_filter.instance == now
    s.add_request(request("r", tokens))
    assert conn.agent.flush()
    assert conn.get_num_new_matched_tokens(s.requests["r"], 0) == (2 * CHUNK, True)
    assert conn._sched.filtered_misses == 0
    conn.shutdown()
