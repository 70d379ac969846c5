"""The scheduler side speaks protocol v2's step op to a real tempokvd: vLLM's real Scheduler
(TempoKVScheduler) driven with made-up model outputs sends at most one progress message per
step, and the daemon's adapter follows vLLM's steps, calibrated from vLLM's measured step
times."""

import time

import pytest

pytest.importorskip("vllm")
pytest.importorskip("torch")

from tempokv import TempoKVClient  # noqa: E402
from tempokv.keys import chunk_keys  # noqa: E402
from tempokv.vllm import TempoKVAsyncScheduler, TempoKVScheduler  # noqa: E402

from test_scheduler import (CHUNK, make_scheduler, output,  # noqa: E402
                            request, store_chunks)

PROGRESS_V1 = {"update_order", "iteration_started", "admitted", "prefill_done",
               "tokens_generated", "finished"}


@pytest.fixture
def sent(monkeypatch):
    """Every message any TempoKVClient sends: [(client, op)]."""
    log = []
    real = TempoKVClient._send

    def send(self, op, message, timeout_s):
        log.append((self, op))
        return real(self, op, message, timeout_s)
    monkeypatch.setattr(TempoKVClient, "_send", send)
    return log


def adapter_stats(endpoint, runtime_id):
    with TempoKVClient(endpoint, name="probe", map_shared_memory=False) as probe:
        s = probe.stats()
    return {k[len("adapter_"):-len(f"_{runtime_id}")]: v for k, v in s.items()
            if k.startswith("adapter_") and k.endswith(f"_{runtime_id}")}, s


@pytest.mark.parametrize("cls", [TempoKVScheduler, TempoKVAsyncScheduler])
def test_one_step_message_per_scheduler_step_and_the_adapter_follows(model_dir, daemon, sent,
                                                                    cls):
    s = make_scheduler(model_dir, daemon.endpoint, cls)
    conn = s.connector
    hit_tokens = list(range(10, 10 + 3 * CHUNK + 5))
    store_chunks(daemon.endpoint, chunk_keys(conn.model_id, hit_tokens, CHUNK)[:2])
    s.add_request(request("hit", hit_tokens, max_tokens=3))
    for i in range(3):  # no hit: added by the next step, not by a call of their own
        s.add_request(request(f"miss{i}", list(range(500 + i, 500 + i + 300)), max_tokens=3))
    conn.agent.flush(send_pending=False)
    agent_client = conn.agent._client
    rt = agent_client.runtime_id
    a, _ = adapter_stats(daemon.endpoint, rt)
    # Only the hit was added so far (by add_request carrying its hit, at queue time).
    assert a["waiting_requests"] == 1 and a["running_requests"] == 0
    # vLLM chunks prefills: the hello gave tempokvd its token budget for the TTU projection.
    assert s.scheduler_config.enable_chunked_prefill
    assert a["token_budget"] == s.scheduler_config.max_num_batched_tokens > 0
    # Its loads are asynchronous: a loading request holds no max_num_seqs slot in vLLM.
    assert a["async_loads"] == 1

    schedules = 0
    running_seen = 0
    pending = []  # scheduler outputs whose model output has not come back (async: one deep)
    for _ in range(80):
        if not s.requests:
            break
        out = s.schedule()
        schedules += 1
        # Finished requests whose saves are still copied out stay in vLLM's requests.
        known_at_step = sum(1 for r in s.requests.values() if not r.is_finished())
        pending.append(out)
        if cls is TempoKVAsyncScheduler and len(pending) < 2 and out.total_num_scheduled_tokens:
            continue  # an asynchronous engine schedules the next step before this output
        out = pending.pop(0)
        time.sleep(0.01)  # the "forward pass"
        reqs = [s.requests[r] for r in out.num_scheduled_tokens if r in s.requests]
        loading = {r.request_id for r in s.requests.values()
                   if r.status.name == "WAITING_FOR_REMOTE_KVS"}
        sending = {r.request_id for r in s.requests.values() if r.is_finished()}
        s.update_from_output(out, output(reqs, finished_recving=loading,
                                         finished_sending=sending))
        # What the agent sent so far has been handled; nothing extra is sent for the test.
        conn.agent.flush(send_pending=False)
        a, _ = adapter_stats(daemon.endpoint, rt)
        running_seen = max(running_seen, a["running_requests"])
        # The adapter knows every request vLLM had at its last step, and no other.
        assert a["waiting_requests"] + a["running_requests"] == known_at_step, a
    assert not s.requests, "every request finished"
    assert running_seen >= 2
    conn.agent.flush()
    a, stats = adapter_stats(daemon.endpoint, rt)
    assert a["waiting_requests"] == 0 and a["running_requests"] == 0
    assert a["runtime_measures"] == 1
    # vLLM's measurements reach the adapter (all but the last iteration or two, whose
    # measurement would ride on a step that never came).
    assert a["iterations_calibrated_total"] >= 3
    assert a["cost_scale"] != 1.0
    ops = [op for c, op in sent if c is agent_client]
    assert not PROGRESS_V1 & set(ops), ops
    # Progress: one message per step at most (and one flush of the last finished requests);
    # the rest are the lookups and the hit's claim.
    assert ops.count("step") <= schedules + 1, (ops.count("step"), schedules)
    assert stats["steps_total"] == ops.count("step")
    assert stats["steps_missed_total"] == 0
    # The hit's claim is one message: add_request with its manifest (protocol v4).
    assert ops.count("add_request") == 1 and ops.count("report_hit") == 0, ops
    assert agent_client.late_errors == 0, agent_client.last_late_error
    assert conn.agent.errors == 0
    conn.shutdown()
