"""The connector's worker side against a real tempokvd, with CPU tensors in vLLM's CPU layout:
saves go through the write region and come back bit for bit into other blocks; a claim that
fails or a daemon that dies reports the load's blocks as errors (vLLM then recomputes them)."""

import time

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("xxhash")

from tempokv import TempoKVClient  # noqa: E402
from tempokv.keys import chunk_keys, model_id  # noqa: E402
from tempokv.vllm.header import HEADER_BYTES, layout_digest  # noqa: E402
from tempokv.vllm.identity import Rank, WorkerIdentity  # noqa: E402
from tempokv.vllm.layout import KVLayout  # noqa: E402
from tempokv.vllm.metadata import LoadSpec, SaveSpec  # noqa: E402
from tempokv.vllm.link import Link as _Link  # noqa: E402
from tempokv.vllm.loader import Loader  # noqa: E402
from tempokv.vllm.saver import Saver  # noqa: E402

import tempokvd_fixture as fx  # noqa: E402

NUM_BLOCKS, BLOCK, HEADS, DIM, LAYERS, BPC = 16, 16, 2, 64, 3, 2
RUNTIME = "test-engine"
MODEL = model_id("m")


def ident(lay, rank=Rank()):
    return WorkerIdentity(MODEL, rank, layout_digest(lay))


def hashes_of(n_chunks):
    return [h for _, h in chunk_keys(MODEL, list(range(n_chunks * BPC * BLOCK)), BPC * BLOCK)]


def obj_bytes(lay):
    return HEADER_BYTES + lay.object_bytes


@pytest.fixture
def kv():
    torch.manual_seed(0)
    kv = {f"l{i}": torch.randn(NUM_BLOCKS, HEADS, BLOCK, 2 * DIM) for i in range(LAYERS)}
    return kv, KVLayout(kv, NUM_BLOCKS, BLOCK, BPC)


def wait(pred, what, timeout_s=15.0):
    return fx.wait_until(pred, what, timeout_s)


def take_until(loader, req_id):
    got, errs = set(), set()

    def pred():
        d, e = loader.take_finished()
        got.update(d)
        errs.update(e)
        return req_id in got
    wait(pred, f"{req_id} to finish loading")
    return errs


def scheduler_client(d):
    return TempoKVClient(d.endpoint, name="sched", runtime=RUNTIME, map_shared_memory=False)


def test_a_saved_chunk_is_restored_bit_for_bit_into_other_blocks(daemon, kv):
    _, lay = kv
    saver = Saver(_Link(daemon.endpoint, RUNTIME, "save", 5.0), lay, ident(lay))
    loader = Loader(_Link(daemon.endpoint, RUNTIME, "load", 5.0), lay, ident(lay))
    keys = chunk_keys("m", list(range(2 * BPC * BLOCK)), BPC * BLOCK)
    saver.submit([SaveSpec("a", keys[0][1], 0, 32, [0, 1]),
                  SaveSpec("a", keys[1][1], 32, 64, [2, 3])])
    wait(lambda: saver.saved == 2, "two puts")
    assert saver.copied_out({"a"}) == {"a"} and saver.had_saves("a")
    want = [lay.block_bytes_of(b) for b in range(4)]
    sched = scheduler_client(daemon)
    assert sched.lookup(keys) == [obj_bytes(lay)] * 2
    sched.add_request(7, prompt_tokens=80, cached_tokens=64, cached_bytes=2 * obj_bytes(lay),
                      max_output_tokens=4)
    sched.report_hit(7, [(m, h, obj_bytes(lay)) for m, h in keys])
    loader.submit(LoadSpec("a2", 7, [h for _, h in keys], [10, 11, 12, 13], 0))
    assert take_until(loader, "a2") == set()
    assert [lay.block_bytes_of(b) for b in (10, 11, 12, 13)] == want
    assert loader.loaded_tokens == 4 * BLOCK and loader.failed == 0
    # Its time split: until seen ready, then until the copy started; the thread's CPU counted.
    assert loader.transfers == 1 and 0 < loader.ready_wait_s <= loader.wait_s
    assert 0 < loader.cpu_s
    # Its moments, in the order they happen.
    (m,) = loader.timeline
    moments = [m[k] for k in ("submitted", "taken", "connected", "requested", "ready_seen",
                              "copy_started", "copy_ended")]
    assert m["req_id"] == "a2" and moments == sorted(moments)
    sched.close(); saver.close(); loader.close()


@pytest.fixture
def slow_daemon():
    # Demand commits at the retrieval request and reads at 100 kB/s: a load of two 96 KiB
    # objects that are not resident waits about two seconds for its claim.
    yield from fx.serve(["--set", "controller.policy=demand",
                         "--set", "store.read_bytes_per_s=100000"])


def test_a_load_waiting_for_its_claim_sleeps_until_the_daemon_says_ready(slow_daemon, kv):
    _, lay = kv
    saver = Saver(_Link(slow_daemon.endpoint, RUNTIME, "save", 5.0), lay, ident(lay))
    keys = chunk_keys("m", list(range(2 * BPC * BLOCK)), BPC * BLOCK)
    saver.submit([SaveSpec("a", keys[0][1], 0, 32, [0, 1]),
                  SaveSpec("a", keys[1][1], 32, 64, [2, 3])])
    wait(lambda: saver.saved == 2, "two puts")
    want = [lay.block_bytes_of(b) for b in range(4)]
    saver.close()
    slow_daemon.restart()  # the store kept, the tier empty: the claim is read from the SSD
    sched = scheduler_client(slow_daemon)
    sched.add_request(7, prompt_tokens=80, cached_tokens=64, cached_bytes=2 * obj_bytes(lay),
                      max_output_tokens=4)
    sched.report_hit(7, [(m, h, obj_bytes(lay)) for m, h in keys])
    loader = Loader(_Link(slow_daemon.endpoint, RUNTIME, "load", 5.0), lay, ident(lay))
    assert loader.reach() is not None
    woken = loader.wakeups
    loader.submit(LoadSpec("a2", 7, [h for _, h in keys], [10, 11, 12, 13], 0))
    assert take_until(loader, "a2") == set()
    assert [lay.block_bytes_of(b) for b in (10, 11, 12, 13)] == want
    (m,) = loader.timeline
    waited = m["ready_seen"] - m["requested"]
    assert waited > 0.5, m  # the reads at 100 kB/s
    # Asleep while it waited, woken by the daemon's notification: each sleep lasts up to
    # MAX_SLEEP_S (a loader that polled every 5 ms woke 200 times a second), and the copy
    # began at once.
    assert loader.wakeups - woken <= waited / Loader.MAX_SLEEP_S + 5
    assert m["copy_started"] - m["ready_seen"] < 0.05
    sched.close(); loader.close()


def test_a_claim_the_daemon_does_not_know_fails_its_blocks_without_writing_them(daemon, kv):
    _, lay = kv
    loader = Loader(_Link(daemon.endpoint, RUNTIME, "load", 5.0), lay, ident(lay))
    before = [lay.block_bytes_of(b) for b in range(NUM_BLOCKS)]
    loader.submit(LoadSpec("x", 99, [2], [4, 5], 1))
    assert take_until(loader, "x") == {5}  # block 4 was vLLM's own: not reported, not touched
    assert [lay.block_bytes_of(b) for b in range(NUM_BLOCKS)] == before
    assert loader.failed == 1
    # It got as far as the request, which the daemon refused: no later moment.
    (m,) = loader.timeline
    assert m["req_id"] == "x" and "connected" in m
    assert not {"requested", "ready_seen", "copy_started"} & set(m)
    loader.close()


def test_loads_fail_fast_after_the_daemon_is_killed(daemon, kv):
    _, lay = kv
    loader = Loader(_Link(daemon.endpoint, RUNTIME, "load", 1.0), lay, ident(lay))
    loader.link.get()
    daemon.kill()
    t = time.monotonic()
    loader.submit(LoadSpec("k", 5, [2], [6, 7], 0))
    assert take_until(loader, "k") == {6, 7}
    assert time.monotonic() - t < 10
    loader.close()


def test_a_preempted_requests_queued_saves_are_copied_out_before_its_blocks_are_reused(daemon,
                                                                                      kv):
    tensors, lay = kv
    # Slow copies: when vLLM preempts the request, all but the first of its saves are queued.
    saver = Saver(_Link(daemon.endpoint, RUNTIME, "save", 5.0), lay, ident(lay), delay_s=0.05)
    keys = chunk_keys("m", list(range(8 * BPC * BLOCK)), BPC * BLOCK)
    specs = [SaveSpec("p", h, 32 * i, 32 * i + 32, [2 * i, 2 * i + 1])
             for i, (_, h) in enumerate(keys)]
    want = [lay.block_bytes_of(b) for b in range(2 * len(keys))]
    saver.submit(specs)
    saver.flush({"p"})  # handle_preemptions: returns once p's blocks may be written
    assert saver.copied_out({"p"}) == {"p"}
    assert saver.flushed >= len(keys) - 1 and saver.dropped == 0
    for t in tensors.values():
        t.zero_()  # the next forward pass writes the freed blocks
    wait(lambda: saver.saved == len(keys), "every put")
    sched = scheduler_client(daemon)
    assert sched.lookup(keys) == [obj_bytes(lay)] * len(keys)
    loader = Loader(_Link(daemon.endpoint, RUNTIME, "load", 5.0), lay, ident(lay))
    blocks = list(range(2 * len(keys)))
    sched.add_request(8, prompt_tokens=300, cached_tokens=256,
                      cached_bytes=len(keys) * obj_bytes(lay), max_output_tokens=4)
    sched.report_hit(8, [(m, h, obj_bytes(lay)) for m, h in keys])
    loader.submit(LoadSpec("p2", 8, [h for _, h in keys], blocks, 0))
    assert take_until(loader, "p2") == set()
    assert [lay.block_bytes_of(b) for b in blocks] == want, "the saves copied reused blocks"
    sched.close(); saver.close(); loader.close()


def test_a_preemptions_saves_not_copied_in_time_are_dropped_and_the_request_copied_out(daemon,
                                                                                     kv):
    _, lay = kv
    saver = Saver(_Link(daemon.endpoint, RUNTIME, "save", 5.0), lay, ident(lay), delay_s=0.5,
                  flush_timeout_s=0.1)
    keys = chunk_keys("m", list(range(4 * BPC * BLOCK)), BPC * BLOCK)
    saver.submit([SaveSpec("p", k[1], 32 * i, 32 * i + 32, [2 * i, 2 * i + 1])
                  for i, k in enumerate(keys)])
    wait(lambda: saver._current == "p", "the first save taken")
    saver.flush({"p"})  # gives up the queued three; waits for the copy in progress
    assert saver._current != "p"
    assert saver.dropped == 3 and saver.copied_out({"p"}) == {"p"}
    wait(lambda: saver.saved == 1, "the copied save's put")
    saver.close()


def test_a_loader_copies_from_the_new_daemons_tier_after_a_restart_on_the_same_endpoint(daemon,
                                                                                        kv):
    # The policy experiment points one engine at a new tempokvd per run: the loader's client
    # recovers inside a call and maps the new tier; the link must not keep copying from the old.
    _, lay = kv
    saver = Saver(_Link(daemon.endpoint, RUNTIME, "save", 5.0), lay, ident(lay))
    link = _Link(daemon.endpoint, RUNTIME, "load", 5.0)
    loader = Loader(link, lay, ident(lay))
    keys = chunk_keys("m", list(range(2 * BPC * BLOCK)), BPC * BLOCK)
    saver.submit([SaveSpec("a", keys[0][1], 0, 32, [0, 1]),
                  SaveSpec("a", keys[1][1], 32, 64, [2, 3])])
    wait(lambda: saver.saved == 2, "two puts")
    want = [lay.block_bytes_of(b) for b in range(4)]
    sched = scheduler_client(daemon)
    sched.add_request(7, prompt_tokens=80, cached_tokens=64, cached_bytes=2 * obj_bytes(lay),
                      max_output_tokens=4)
    sched.report_hit(7, [(m, h, obj_bytes(lay)) for m, h in keys])
    loader.submit(LoadSpec("a2", 7, [h for _, h in keys], [10, 11, 12, 13], 0))
    assert take_until(loader, "a2") == set()
    old_tier = link.tier.data_ptr()
    sched.close(); saver.close()

    daemon.restart()  # same endpoint and store, a new instance with a new tier
    for b in (10, 11, 12, 13):
        for t in kv[0].values():
            t[b].zero_()
    sched = scheduler_client(daemon)
    assert sched.lookup(keys) == [obj_bytes(lay)] * 2
    errs = {"first"}
    # Another try only while a try found it down: the heartbeat may still see the old instance
    # gone, then the link waits retry_s (1 s) before its next hello; at load ~15 two tries
    # were not always enough.
    for rid, req in ((8, "a3"), (9, "a4"), (10, "a5"), (11, "a6")):
        if not errs:
            break
        if errs != {"first"}:
            time.sleep(link.retry_s)
        sched.add_request(rid, prompt_tokens=80, cached_tokens=64,
                          cached_bytes=2 * obj_bytes(lay), max_output_tokens=4)
        sched.report_hit(rid, [(m, h, obj_bytes(lay)) for m, h in keys])
        loader.submit(LoadSpec(req, rid, [h for _, h in keys], [10, 11, 12, 13], 0))
        errs = take_until(loader, req)
    assert errs == set()
    assert link.tier.data_ptr() != old_tier
    assert [lay.block_bytes_of(b) for b in (10, 11, 12, 13)] == want
    sched.close(); loader.close()


def test_the_loader_and_saver_links_reach_a_new_daemon_on_the_same_endpoint(daemon, kv):
    # The policy experiment waits for this after each daemon switch: a link still connecting
    # had failed the first load after the switch ("no connection took the request").
    _, lay = kv
    loader = Loader(_Link(daemon.endpoint, RUNTIME, "load", 2.0), lay, ident(lay))
    saver = Saver(_Link(daemon.endpoint, RUNTIME, "save", 2.0), lay, ident(lay))
    first = loader.reach()
    assert first is not None and saver.reach() == first
    daemon.restart()
    with TempoKVClient(daemon.endpoint, name="probe", map_shared_memory=False) as probe:
        new = probe.instance
    assert new != first
    wait(lambda: loader.reach() == new, "the loader's link to reach the new daemon", 30)
    wait(lambda: saver.reach() == new, "the saver's link to reach the new daemon", 30)
    keys = chunk_keys("m", list(range(BPC * BLOCK)), BPC * BLOCK)
    saver.submit([SaveSpec("s", keys[0][1], 0, 32, [0, 1])])
    wait(lambda: saver.saved == 1, "a put to the new daemon")
    assert saver.failed == 0
    saver.close(); loader.close()


def test_a_worker_link_that_says_hello_first_creates_the_runtime_with_the_engines_settings(
        daemon):
    # vLLM's workers may reach tempokvd before its scheduler (a restart, a slow agent): their
    # hello creates the runtime then, and must declare the engine's slot limit, token budget and
    # asynchronous loads as the scheduler's would.
    settings = dict(max_active=3, token_budget=512, async_loads=True)
    link = _Link(daemon.endpoint, "settings-engine", "load", 5.0, settings=settings)
    assert link.reach() is not None
    rt = link.client.runtime_id
    with TempoKVClient(daemon.endpoint, name="probe", map_shared_memory=False) as probe:
        s = probe.stats()
    assert s[f"adapter_token_budget_{rt}"] == 512
    assert s[f"adapter_async_loads_{rt}"] == 1
    link.drop()


def two_ranks():
    """Two tensor-parallel ranks' KV (different shards of the same chunks) and identities."""
    out = []
    for r in range(2):
        torch.manual_seed(100 + r)
        kv = {f"l{i}": torch.randn(NUM_BLOCKS, HEADS, BLOCK, 2 * DIM) for i in range(LAYERS)}
        lay = KVLayout(kv, NUM_BLOCKS, BLOCK, BPC)
        rank = Rank(r, 2)
        out.append((lay, WorkerIdentity(model_id(f"m|tp={r}/2"), rank, layout_digest(lay))))
    return out


def test_each_tensor_parallel_rank_saves_and_loads_its_own_shard(daemon):
    # Both ranks save the same chunks (the scheduler hands them one SaveSpec); the claim's
    # manifest lists both ranks' objects, chunk by chunk; each rank copies its own shard.
    ranks = two_ranks()
    settings = dict(ranks=2)
    hashes = hashes_of(2)
    for r, (lay, ident_r) in enumerate(ranks):
        saver = Saver(_Link(daemon.endpoint, RUNTIME, f"save{r}", 5.0, settings=settings), lay,
                      ident_r)
        saver.submit([SaveSpec("a", hashes[0], 0, 32, [0, 1]),
                      SaveSpec("a", hashes[1], 32, 64, [2, 3])])
        wait(lambda: saver.saved == 2, f"rank {r}'s two puts")
        saver.close()
    want = [[lay.block_bytes_of(b) for b in range(4)] for lay, _ in ranks]
    assert want[0] != want[1]
    manifest = [(ident_r.model_id, h) for h in hashes for _, ident_r in ranks]
    sched = TempoKVClient(daemon.endpoint, name="sched", runtime=RUNTIME, ranks=2,
                          map_shared_memory=False)
    n = obj_bytes(ranks[0][0])
    assert sched.lookup(manifest) == [n] * 4
    sched.add_request(7, prompt_tokens=80, cached_tokens=64, cached_bytes=4 * n,
                      max_output_tokens=4)
    sched.report_hit(7, [(m, h, n) for m, h in manifest])
    loaders = [Loader(_Link(daemon.endpoint, RUNTIME, f"load{r}", 5.0, settings=settings), lay,
                      ident_r) for r, (lay, ident_r) in enumerate(ranks)]
    for ld in loaders:
        ld.submit(LoadSpec("a2", 7, hashes, [10, 11, 12, 13], 0, ranks=2))
    for r, ((lay, _), ld) in enumerate(zip(ranks, loaders)):
        assert take_until(ld, "a2") == set(), f"rank {r}'s load failed"
        assert [lay.block_bytes_of(b) for b in (10, 11, 12, 13)] == want[r], f"rank {r}"
    sched.close()
    for ld in loaders:
        ld.close()


def put_object(endpoint, key, obj):
    with TempoKVClient(endpoint, name="put", runtime=RUNTIME) as c:
        c.put(key, 0, BPC * BLOCK, bytes(obj))


def claim(endpoint, rid, keys, nbytes):
    sched = scheduler_client_at(endpoint)
    sched.add_request(rid, prompt_tokens=80, cached_tokens=32 * len(keys),
                      cached_bytes=len(keys) * nbytes, max_output_tokens=4)
    sched.report_hit(rid, [(m, h, nbytes) for m, h in keys])
    return sched


def scheduler_client_at(endpoint):
    return TempoKVClient(endpoint, name="sched", runtime=RUNTIME, map_shared_memory=False)


def saved_object(lay, ident_r, chunk_hash, blocks):
    """The bytes a Saver puts for ``blocks`` under ``ident_r``'s key: header, then payload."""
    import xxhash
    from tempokv.vllm import header
    payload = torch.zeros(lay.object_bytes, dtype=torch.uint8)
    lay.save(blocks, payload)
    head = header.pack(ident_r.key(chunk_hash), ident_r.rank, ident_r.layout_digest,
                       lay.object_bytes, xxhash.xxh3_64_intdigest(payload.numpy()))
    return bytearray(head) + bytearray(payload.numpy().tobytes())


@pytest.mark.parametrize("alter", ["none", "payload byte", "header byte", "other rank",
                                   "other layout", "other key"])
def test_an_object_that_is_not_the_one_asked_for_is_a_load_error_and_nothing_is_copied(
        daemon, kv, alter):
    _, lay = kv
    me = ident(lay)
    h = hashes_of(1)[0]
    obj = saved_object(lay, me, h, [0, 1])
    if alter == "payload byte":
        obj[HEADER_BYTES + 1000] ^= 0x40
    elif alter == "header byte":
        obj[20] ^= 0x01
    elif alter == "other rank":  # what rank 1 of 2 put under rank 0's key (the old keys)
        obj = saved_object(lay, WorkerIdentity(MODEL, Rank(1, 2), me.layout_digest), h, [0, 1])
    elif alter == "other layout":  # another backend's byte order, same size
        obj = saved_object(lay, WorkerIdentity(MODEL, me.rank, me.layout_digest ^ 1), h, [0, 1])
    elif alter == "other key":  # a span of another object (or a hash collision)
        obj = saved_object(lay, me, h ^ 1, [0, 1])
    put_object(daemon.endpoint, me.key(h), obj)
    before = [lay.block_bytes_of(b) for b in range(NUM_BLOCKS)]
    sched = claim(daemon.endpoint, 7, [me.key(h)], len(obj))
    loader = Loader(_Link(daemon.endpoint, RUNTIME, "load", 5.0), lay, me)
    loader.submit(LoadSpec("a", 7, [h], [10, 11], 0))
    errors = take_until(loader, "a")
    if alter == "none":
        assert errors == set() and lay.block_bytes_of(10) == before[0]
    else:
        assert errors == {10, 11}
        assert [lay.block_bytes_of(b) for b in range(NUM_BLOCKS)] == before, "a block written"
        assert loader.failed == 1
    sched.close(); loader.close()


class _StubClient:
    """A daemon that answers a claim ready with the spans it is given."""

    def __init__(self, spans):
        self.spans, self.cancelled = spans, []

    def request_retrieval(self, rid, on_ready=None):
        return "ready"

    def begin_transfer(self, rid):
        pass

    def objects(self, rid):
        return self.spans

    def end_transfer(self, rid):
        pass

    def cancel(self, rid):
        self.cancelled.append(rid)

    def poll(self, timeout_s=0):
        pass

    def wait(self, timeout_s, fds=()):
        import select
        select.select(list(fds), [], [], timeout_s)


class _StubLink:
    def __init__(self, client, tier_bytes):
        self.client = client
        self.tier = torch.zeros(tier_bytes, dtype=torch.uint8)

    def get(self):
        return self.client

    def drop(self):
        pass


@pytest.mark.parametrize("span", [(2**64 - 1, 0), (2**64 - 1, None), (None, None)])
def test_a_span_outside_the_tier_is_a_load_error_never_a_read(kv, span):
    _, lay = kv
    n = obj_bytes(lay)
    tier_bytes = 4 * n
    offset = tier_bytes - n + 64 if span[0] is None else span[0]  # the last one runs past
    client = _StubClient([(offset, n if span[1] is None else span[1])])
    before = [lay.block_bytes_of(b) for b in range(NUM_BLOCKS)]
    loader = Loader(_StubLink(client, tier_bytes), lay, ident(lay))
    loader.submit(LoadSpec("s", 3, [hashes_of(1)[0]], [4, 5], 0))
    assert take_until(loader, "s") == {4, 5}
    assert [lay.block_bytes_of(b) for b in range(NUM_BLOCKS)] == before
    assert client.cancelled == [3]
    loader.close()
