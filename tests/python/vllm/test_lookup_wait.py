"""A lookup still in flight when vLLM's schedule() asks for a request's hit is waited for within
the connector's budget (``lookup_wait_ms``), so a request that arrives just before a step loads
its hit from that step instead of the next one; a wait that runs out turns waiting off for a
while. The daemon is stopped (SIGSTOP) to hold the lookup in flight for as long as a test needs
(less than the client's lookup timeout, 0.25 s, where the lookup is to succeed)."""

import os
import signal
import sys
import threading
import time

import pytest

pytest.importorskip("vllm")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_scheduler import CHUNK, make_scheduler, request, store_chunks  # noqa: E402,I100

from tempokv.keys import chunk_keys  # noqa: E402
from tempokv.vllm.scheduler_side import LOOKUP_WAIT_BACKOFF_S  # noqa: E402


def stored_request(daemon, s, rid):
    tokens = list(range(10, 10 + 3 * CHUNK + 5))
    keys = chunk_keys(s.connector.model_id, tokens, CHUNK)
    store_chunks(daemon.endpoint, keys[:2])
    return request(rid, tokens)


def held_lookup(daemon, s, req, release_after_s):
    """Queues req while the daemon is stopped (its lookup in flight) and continues the daemon
    after release_after_s (None: the caller does)."""
    s.connector.agent.flush()  # the agent has reached the daemon (hello done) before the stop
    os.kill(daemon.proc.pid, signal.SIGSTOP)
    s.add_request(req)
    if release_after_s is not None:
        threading.Timer(release_after_s, os.kill, (daemon.proc.pid, signal.SIGCONT)).start()


def test_a_lookup_in_flight_is_waited_for_so_its_hit_loads_in_the_same_step(model_dir, daemon):
    s = make_scheduler(model_dir, daemon.endpoint, extra={"lookup_wait_ms": 10000})
    try:
        held_lookup(daemon, s, stored_request(daemon, s, "a"), 0.05)
        out = s.schedule()  # the lookup is in flight: the daemon answers 0.05 s from now
        sched = s.connector._sched
        assert [len(x.hashes) for x in out.kv_connector_metadata.loads] == [2]
        assert sched.lookup_waits == 1 and sched.lookup_wait_timeouts == 0
        stats = s.connector.get_kv_connector_stats()  # vLLM's metrics carry the wait
        assert stats.data.get("lookup_waits") == 1 and "lookup_wait_timeouts" not in stats.data
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
        s.connector.shutdown()


def test_without_the_wait_a_lookup_in_flight_leaves_the_request_for_the_next_step(model_dir,
                                                                                daemon):
    s = make_scheduler(model_dir, daemon.endpoint, extra={"lookup_wait_ms": 0})
    try:
        held_lookup(daemon, s, stored_request(daemon, s, "a"), None)
        out = s.schedule()
        assert out.kv_connector_metadata.loads == [] and out.num_scheduled_tokens == {}
        assert s.connector._sched.lookup_waits == 0
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
        s.connector.shutdown()


def test_a_wait_that_runs_out_costs_one_budget_then_steps_do_not_wait(model_dir, daemon):
    budget_s = 0.1  # less than the lookup timeout: the lookup is still in flight when it runs out
    s = make_scheduler(model_dir, daemon.endpoint, extra={"lookup_wait_ms": budget_s * 1e3})
    try:
        held_lookup(daemon, s, stored_request(daemon, s, "a"), None)
        t0 = time.monotonic()
        out = s.schedule()
        first_s = time.monotonic() - t0
        assert out.kv_connector_metadata.loads == [] and out.num_scheduled_tokens == {}
        assert first_s >= 0.9 * budget_s, "waited its budget for the hung daemon"
        sched = s.connector._sched
        assert sched.lookup_waits == 1 and sched.lookup_wait_timeouts == 1
        stats = s.connector.get_kv_connector_stats()
        assert stats.data.get("lookup_waits") == 1 and stats.data.get("lookup_wait_timeouts") == 1
        t0 = time.monotonic()
        out = s.schedule()  # within the backoff: no wait at all
        assert time.monotonic() - t0 < min(budget_s, LOOKUP_WAIT_BACKOFF_S)
        assert out.num_scheduled_tokens == {} and sched.lookup_waits == 1
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
        s.connector.shutdown()


def test_the_lookup_wait_must_not_be_negative(model_dir, daemon):
    with pytest.raises(ValueError, match="lookup_wait_ms"):
        make_scheduler(model_dir, daemon.endpoint, extra={"lookup_wait_ms": -1})
