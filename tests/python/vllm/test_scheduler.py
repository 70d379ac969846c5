"""vLLM's real Scheduler (TempoKVScheduler) with the TempoKV connector's scheduler side and a
real tempokvd, driven step by step with made-up model outputs, as vLLM's own connector unit
tests drive theirs (no model, no worker)."""


import time

import pytest

pytest.importorskip("vllm")
torch = pytest.importorskip("torch")


from vllm import SamplingParams  # noqa: E402
from vllm.config import (CacheConfig, DeviceConfig, KVTransferConfig, ModelConfig,  # noqa: E402
                         ParallelConfig, SchedulerConfig, VllmConfig)
from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheConfig,  # noqa: E402
                                        KVCacheGroupSpec)
from vllm.v1.outputs import KVConnectorOutput, ModelRunnerOutput  # noqa: E402
from vllm.v1.request import Request, RequestStatus  # noqa: E402
from vllm.v1.structured_output import StructuredOutputManager  # noqa: E402

from tempokv import TempoKVClient  # noqa: E402
from tempokv.keys import chunk_keys  # noqa: E402
from tempokv.vllm import TempoKVAsyncScheduler, TempoKVScheduler  # noqa: E402
from tempokv.vllm.metadata import TempoKVMetadata  # noqa: E402

BLOCK, CHUNK, NUM_BLOCKS = 16, 32, 200


def make_scheduler(model_dir, endpoint, cls=TempoKVScheduler, extra=None, tp=1,
                   prefix_caching=False, log_stats=False):
    mc = ModelConfig(model=model_dir, dtype="float32", seed=0)
    vc = VllmConfig(
        model_config=mc,
        parallel_config=ParallelConfig(tensor_parallel_size=tp),
        scheduler_config=SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=256,
                                         max_model_len=4096, enable_chunked_prefill=True,
                                         is_encoder_decoder=False),
        cache_config=CacheConfig(block_size=BLOCK, enable_prefix_caching=prefix_caching),
        kv_transfer_config=KVTransferConfig(
            kv_connector="TempoKVConnector", kv_connector_module_path="tempokv.vllm",
            kv_role="kv_both", kv_load_failure_policy="recompute",
            kv_connector_extra_config={"endpoint": endpoint, "chunk_tokens": CHUNK,
                                       **(extra or {})}),
        device_config=DeviceConfig("cpu"))
    vc.cache_config.num_gpu_blocks = NUM_BLOCKS
    kvc = KVCacheConfig(num_blocks=NUM_BLOCKS, kv_cache_tensors=[], kv_cache_groups=[
        KVCacheGroupSpec(["layer.0"], FullAttentionSpec(block_size=BLOCK, num_kv_heads=1,
                                                        head_size=64, dtype=torch.float32))])
    return cls(vllm_config=vc, kv_cache_config=kvc, block_size=BLOCK,
                            structured_output_manager=StructuredOutputManager(vc),
                            log_stats=log_stats)


def block_hasher():
    """What vLLM's EngineCore gives each Request where prefix caching is on: its block hashes."""
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
    fn = get_hash_fn_by_name("sha256")
    init_none_hash(fn)
    return get_request_block_hasher(BLOCK, fn)


def request(rid, tokens, max_tokens=2, **kw):
    sp = SamplingParams(max_tokens=max_tokens, ignore_eos=True)
    return Request(request_id=rid, prompt_token_ids=tokens, sampling_params=sp,
                   pooling_params=None, **kw)


def output(reqs, finished_recving=None, invalid=None, finished_sending=None):
    ids = [r.request_id for r in reqs]
    kv = KVConnectorOutput(finished_sending=finished_sending or set(),
                           finished_recving=finished_recving or set(),
                           invalid_block_ids=invalid or set())
    return ModelRunnerOutput(req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)},
                             sampled_token_ids=[[5] for _ in ids], logprobs=None,
                             prompt_logprobs_dict={}, pooler_output=None,
                             kv_connector_output=kv)


def store_chunks(endpoint, keys, nbytes=4096):
    with TempoKVClient(endpoint, name="seed") as c:
        for i, k in enumerate(keys):
            c.put(k, i * CHUNK, (i + 1) * CHUNK, bytes([i]) * nbytes)


def hashes(keys):
    return [h for _, h in keys]


def step(s, **kw):
    out = s.schedule()
    reqs = [s.requests[r] for r in out.num_scheduled_tokens]
    s.update_from_output(out, output(reqs, **kw))
    return out


@pytest.mark.parametrize("cls", [TempoKVScheduler, TempoKVAsyncScheduler])
@pytest.mark.parametrize("fail", [False, True])
def test_a_stored_prefix_is_claimed_at_queue_time_and_loaded_asynchronously(model_dir, daemon,
                                                                             fail, cls):
    s = make_scheduler(model_dir, daemon.endpoint, cls)
    conn = s.connector
    tokens = list(range(10, 10 + 3 * CHUNK + 5))  # 3 whole chunks + 5 tokens
    keys = chunk_keys(conn.model_id, tokens, CHUNK)
    store_chunks(daemon.endpoint, keys[:2])  # the first two chunks are in the store
    s.add_request(request("a", tokens))
    conn.agent.flush()
    with TempoKVClient(daemon.endpoint, name="probe", map_shared_memory=False) as probe:
        assert probe.stats().get("claims_planned", 0) + probe.stats().get(
            "claims_staging", 0) + probe.stats().get("claims_stage_ready", 0) >= 1

    out = s.schedule()  # the load starts; the request waits without running
    meta = out.kv_connector_metadata
    assert isinstance(meta, TempoKVMetadata) and len(meta.loads) == 1
    load = meta.loads[0]
    assert load.hashes == hashes(keys[:2]) and len(load.block_ids) == 2 * CHUNK // BLOCK
    assert load.first_block == 0 and out.num_scheduled_tokens == {}
    assert s.requests["a"].status == RequestStatus.WAITING_FOR_REMOTE_KVS
    # One load per request: asked again (after a failure), the connector offers nothing.
    assert conn.get_num_new_matched_tokens(s.requests["a"], 0) == (0, False)
    invalid = set(load.block_ids[2:]) if fail else set()
    s.update_from_output(out, output([], finished_recving={"a"}, invalid=invalid))

    out = s.schedule()  # the request runs from the restored (or the still valid) prefix
    computed = (CHUNK if fail else 2 * CHUNK)
    assert out.num_scheduled_tokens == {"a": len(tokens) - computed}
    # The third chunk is computed in this step: saved. The claimed ones are in the store
    # already: not saved again, even when a failed load has them recomputed.
    assert [sv.chunk_hash for sv in out.kv_connector_metadata.saves] == hashes(keys[2:])
    s.update_from_output(out, output([s.requests["a"]]))
    step(s)  # the second (last) output token
    assert "a" in s.requests, "blocks are held until the saves are copied out"
    step(s, finished_sending={"a"})
    assert "a" not in s.requests
    conn.agent.flush()
    assert conn.agent.errors == 0
    conn.shutdown()


def test_a_request_whose_lookup_failed_is_computed_without_a_load(model_dir, daemon):
    s = make_scheduler(model_dir, daemon.endpoint)
    conn = s.connector
    daemon.kill()  # lookups now fail fast: no hit, vLLM computes everything
    tokens = list(range(3 * CHUNK))
    s.add_request(request("b", tokens, max_tokens=1))
    conn.agent.flush(timeout_s=30)
    out = s.schedule()
    assert out.kv_connector_metadata.loads == []
    assert out.num_scheduled_tokens == {"b": len(tokens)}
    conn.shutdown()


def load_as_the_worker(endpoint, runtime, rid):
    """What the worker's loader does with a claim, without copying: retrieval, transfer."""
    with TempoKVClient(endpoint, name="worker", runtime=runtime,
                       map_shared_memory=False) as w:
        if w.request_retrieval(rid) == "wait":
            w.wait_ready(rid, timeout_s=30)
        w.begin_transfer(rid)
        w.end_transfer(rid)


@pytest.mark.parametrize("wait_ms", [0, 10000])
def test_a_preempted_request_is_queued_again_with_a_new_claim_and_loads_its_prefix_again(
        model_dir, daemon, wait_ms):
    # wait_ms: the connector's lookup_wait_ms. 0: the new lookup is answered between steps, so
    # the load is planned in the step after the preemption; with a wait, in the preempting step.
    s = make_scheduler(model_dir, daemon.endpoint, extra={"lookup_wait_ms": wait_ms})
    conn = s.connector
    tokens = list(range(7, 7 + 2 * CHUNK + 1))
    keys = chunk_keys(conn.model_id, tokens, CHUNK)
    store_chunks(daemon.endpoint, keys)
    s.add_request(request("c", tokens, max_tokens=4))
    conn.agent.flush()
    out = s.schedule()
    first = out.kv_connector_metadata.loads[0]
    load_as_the_worker(daemon.endpoint, conn.runtime, first.rid)  # its claim is released
    s.update_from_output(out, output([], finished_recving={"c"}))
    step(s)  # the last prompt token: the first output token
    req = s.requests["c"]
    assert req.status == RequestStatus.RUNNING

    # vLLM preempts it (recompute): blocks freed, back to the front of the queue.
    s.running.remove(req)
    s._preempt_request(req, time.monotonic())
    out = s.schedule()  # no waiting request is computed in a step that preempted
    assert out.preempted_req_ids == {"c"} and "c" in out.kv_connector_metadata.preempted
    st = conn._sched.reqs["c"]
    assert st.rid != first.rid and st.preemptions == 1 and conn._sched.requeued == 1
    if not wait_ms:
        assert out.kv_connector_metadata.loads == []
        conn.agent.flush()
        out = s.schedule()  # its new lookup is published: loaded again, under the new id
    loads = out.kv_connector_metadata.loads
    assert [(ld.req_id, ld.rid, ld.hashes) for ld in loads] == [("c", st.rid, hashes(keys[:2]))]
    assert s.requests["c"].status == RequestStatus.WAITING_FOR_REMOTE_KVS
    load_as_the_worker(daemon.endpoint, conn.runtime, st.rid)
    s.update_from_output(out, output([], finished_recving={"c"}))
    out = s.schedule()
    assert out.num_scheduled_tokens == {"c": len(tokens) + 1 - 2 * CHUNK}  # prompt tail + 1 output
    s.update_from_output(out, output([s.requests["c"]]))
    while "c" in s.requests:
        step(s)
    conn.agent.flush()
    # Cancelling the first id (its claim released with its copy) is no error.
    assert conn.agent.errors == 0
    stats = daemon_stats(daemon.endpoint)
    assert stats.get("claims_cancelled_total", 0) == 0
    conn.shutdown()


def daemon_stats(endpoint):
    with TempoKVClient(endpoint, name="probe", map_shared_memory=False) as probe:
        return probe.stats()


def test_a_hit_larger_than_the_protected_budget_claims_the_prefix_that_fits(model_dir, daemon):
    s = make_scheduler(model_dir, daemon.endpoint)
    conn = s.connector
    tokens = list(range(20, 20 + 3 * CHUNK + 5))
    keys = chunk_keys(conn.model_id, tokens, CHUNK)
    # Three stored chunks of 12 MiB: 36 MiB, over the daemon's 32 MiB protected budget.
    store_chunks(daemon.endpoint, keys[:3], nbytes=12 << 20)
    with TempoKVClient(daemon.endpoint, name="probe", map_shared_memory=False) as probe:
        assert probe.lookup(keys[:3], with_claimable=True) == ([12 << 20] * 3, 2)
    s.add_request(request("d", tokens))
    conn.agent.flush()
    assert conn.agent.trimmed_claims == 1
    out = s.schedule()
    (load,) = out.kv_connector_metadata.loads
    assert load.hashes == hashes(keys[:2]), "the two chunks that fit, not nothing"
    assert len(load.block_ids) == 2 * CHUNK // BLOCK
    conn.agent.flush()
    assert conn.agent.errors == 0


def test_steps_that_schedule_nothing_while_a_load_waits_hand_over_no_snapshot(model_dir, daemon):
    # The engine spins while requests wait for their KV: each of those steps used to hand the
    # agent an identical snapshot (thousands a second), delaying its lookups by seconds.
    s = make_scheduler(model_dir, daemon.endpoint, TempoKVAsyncScheduler)
    conn = s.connector
    posted = []
    inner = conn.on_schedule
    conn.on_schedule = lambda snap: (posted.append(snap), inner(snap))
    tokens = list(range(10, 10 + 2 * CHUNK + 5))
    store_chunks(daemon.endpoint, chunk_keys(conn.model_id, tokens, CHUNK))
    s.add_request(request("a", tokens))
    conn.agent.flush()
    out = s.schedule()  # the load starts: the queues changed, a snapshot goes
    assert s.requests["a"].status == RequestStatus.WAITING_FOR_REMOTE_KVS and len(posted) == 1
    s.update_from_output(out, output([]))
    assert s.idle_yields == 1  # nothing runs, the request waits for its KV: yield the GIL
    for _ in range(20):  # nothing to schedule, nothing changes
        s.update_from_output(s.schedule(), output([]))
    assert len(posted) == 1 and s.idle_yields == 21
    s.add_request(request("b", list(range(5000, 5040))))  # the waiting queue changes: one more
    conn.agent.flush()
    out = s.schedule()
    assert len(posted) == 2 and posted[-1].iteration > 0  # b's prefill is scheduled
    assert s.idle_yields == 21  # a step that runs something does not yield
    conn.shutdown()


def test_one_free_slot_starts_the_loads_of_every_waiting_request_with_a_hit(model_dir, daemon):
    # What tempokvd's TTU projection assumes of vLLM (its hello says async_loads): a request
    # whose KV loads (WAITING_FOR_REMOTE_KVS) holds no max_num_seqs slot, so when one slot frees
    # schedule() starts the loads of the whole waiting queue; a loaded request then takes the
    # next free slot, the others keep loading without one.
    s = make_scheduler(model_dir, daemon.endpoint)  # max_num_seqs = 4
    conn = s.connector
    for i in range(4):  # no hit; r0 ends after 2 tokens, the others run on
        s.add_request(request(f"r{i}", list(range(1000 * (i + 1), 1000 * (i + 1) + 40)),
                              max_tokens=2 if i == 0 else 50))
    hits = []
    for i in range(3):
        tokens = list(range(100 * i + 7, 100 * i + 7 + 2 * CHUNK + 5))
        store_chunks(daemon.endpoint, chunk_keys(conn.model_id, tokens, CHUNK)[:2])
        s.add_request(request(f"h{i}", tokens, max_tokens=2))
        hits.append(f"h{i}")
    conn.agent.flush()
    out = step(s)  # four prefills fill the slots: no load starts
    assert sorted(out.num_scheduled_tokens) == ["r0", "r1", "r2", "r3"]
    assert out.kv_connector_metadata.loads == []
    assert all(s.requests[h].status == RequestStatus.WAITING for h in hits)
    step(s)  # r0's second token: it finishes, one slot frees
    assert s.requests["r0"].is_finished() and len(s.running) == 3  # (its saves hold blocks)
    out = s.schedule()  # one free slot: all three loads start, none takes a slot
    assert sorted(ld.req_id for ld in out.kv_connector_metadata.loads) == hits
    assert all(s.requests[h].status == RequestStatus.WAITING_FOR_REMOTE_KVS for h in hits)
    assert len(s.running) == 3
    reqs = [s.requests[r] for r in out.num_scheduled_tokens]
    s.update_from_output(out, output(reqs, finished_recving={"h1"}))
    out = s.schedule()  # h1's KV arrived: it takes the free slot; h0 and h2 keep loading
    assert "h1" in out.num_scheduled_tokens and len(s.running) == 4
    assert s.requests["h0"].status == RequestStatus.WAITING_FOR_REMOTE_KVS
    assert s.requests["h2"].status == RequestStatus.WAITING_FOR_REMOTE_KVS
    conn.shutdown()


def test_a_new_daemon_instance_gets_the_chunks_saved_to_the_last_one_saved_again(model_dir,
                                                                                 daemon):
    # The scheduler side saves a chunk once per engine. After a restart (or another daemon on
    # the endpoint, over another store) the new instance may lack it: it is saved again.
    s = make_scheduler(model_dir, daemon.endpoint)
    conn = s.connector
    tokens = list(range(300, 300 + 2 * CHUNK + 5))
    keys = chunk_keys(conn.model_id, tokens, CHUNK)

    def run(rid):
        s.add_request(request(rid, tokens, max_tokens=1))
        conn.agent.flush()
        out = step(s)  # no stored chunk (no worker puts here): computed, its chunks saved
        saved = [sv.chunk_hash for sv in out.kv_connector_metadata.saves]
        if saved:  # held until the worker says the saves are copied out
            step(s, finished_sending={rid})
        assert rid not in s.requests
        return saved

    assert run("a") == hashes(keys[:2])
    assert run("b") == [], "the same daemon: saved once per engine"
    first = conn.agent.daemon_instance
    daemon.restart()
    deadline = time.monotonic() + 10  # the agent reconnects within its 1 s back-off
    while conn.agent.daemon_instance in (None, first) and time.monotonic() < deadline:
        conn.agent.flush()
        time.sleep(0.1)
    assert conn.agent.daemon_instance not in (None, first)
    assert run("c") == hashes(keys[:2]), "a new instance: saved again"
    conn.shutdown()


def test_the_reconnect_delay_is_configurable_and_must_be_positive(model_dir, daemon):
    assert make_scheduler(model_dir, daemon.endpoint).connector.agent.retry_s == 1.0
    s = make_scheduler(model_dir, daemon.endpoint, extra={"retry_s": 0.1})
    assert s.connector.agent.retry_s == 0.1
    with pytest.raises(ValueError, match="retry_s must be > 0"):
        make_scheduler(model_dir, daemon.endpoint, extra={"retry_s": 0})


def test_with_two_tensor_parallel_ranks_a_chunk_is_a_hit_only_when_both_ranks_objects_are_stored(
        model_dir, daemon):
    s = make_scheduler(model_dir, daemon.endpoint, tp=2)
    conn = s.connector
    m0, m1 = conn.model_ids
    assert m0 != m1
    tokens = list(range(40, 40 + 3 * CHUNK + 5))
    hs = hashes(chunk_keys(m0, tokens, CHUNK))
    store_chunks(daemon.endpoint, [(m0, h) for h in hs[:2]])  # rank 0's only: no hit
    s.add_request(request("a", tokens))
    conn.agent.flush()
    assert s.schedule().kv_connector_metadata.loads == []
    store_chunks(daemon.endpoint, [(m1, hs[0])])  # the first chunk of both ranks: one chunk
    s.add_request(request("b", tokens))
    conn.agent.flush()
    out = s.schedule()
    (load,) = out.kv_connector_metadata.loads
    assert (load.req_id, load.hashes, load.ranks) == ("b", hs[:1], 2)
    # One claim, staged once, lists both ranks' objects of the chunk, in rank order.
    with TempoKVClient(daemon.endpoint, name="rank0", runtime=conn.runtime) as w:
        if w.request_retrieval(load.rid) == "wait":
            w.wait_ready(load.rid, timeout_s=30)
        spans = w.objects(load.rid)
        assert len(spans) == 2 and spans[0] != spans[1]
        assert [bytes(w.read_object(*sp)[:1]) for sp in spans] == [b"\x00", b"\x00"]
        w.cancel(load.rid)
    conn.shutdown()


def test_a_request_with_a_cache_salt_never_hits_chunks_stored_without_it_or_with_another(
        model_dir, daemon):
    s = make_scheduler(model_dir, daemon.endpoint)
    conn = s.connector
    tokens = list(range(70, 70 + 2 * CHUNK + 5))
    store_chunks(daemon.endpoint, chunk_keys(conn.model_id, tokens, CHUNK))  # unsalted
    s.add_request(request("t1", tokens, cache_salt="tenant-1"))
    conn.agent.flush()
    out = s.schedule()
    assert out.kv_connector_metadata.loads == [], "a salted request hit unsalted KV"
    assert out.num_scheduled_tokens == {"t1": len(tokens)}
    # Its chunks are saved under its salt: the same salt hits them, another does not.
    salted = [sv.chunk_hash for sv in out.kv_connector_metadata.saves]
    assert len(salted) == 2 and not set(salted) & set(hashes(chunk_keys(0, tokens, CHUNK)))
    store_chunks(daemon.endpoint, [(conn.model_id, h) for h in salted])
    s.add_request(request("t1-again", tokens, cache_salt="tenant-1"))
    s.add_request(request("t2", tokens, cache_salt="tenant-2"))
    s.add_request(request("plain", tokens))
    conn.agent.flush()
    loads = {ld.req_id: ld.hashes for ld in s.schedule().kv_connector_metadata.loads}
    assert loads.get("t1-again") == salted[:2]
    assert "t2" not in loads
    assert loads.get("plain") == hashes(chunk_keys(conn.model_id, tokens, CHUNK))[:2]
    conn.shutdown()
