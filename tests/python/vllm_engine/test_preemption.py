"""A real vLLM engine (CPU backend, in-process) with a KV cache so small that vLLM must preempt:
a preempted request's prefix is restored from tempokvd again instead of recomputed, and the saves
a preempted request's worker had not copied yet still reach the store.

Pass 1 runs each prompt alone (no preemption) and saves its chunks. Pass 2 submits them all:
two fit the 15 blocks of KV, both restore their prefix, and when their decodes need a new block
vLLM preempts one (recompute: its blocks are freed and it waits again). The connector queues it
again for tempokvd under a new id, with a new lookup and claim, and loads its prefix again.
Greedy outputs must be those of each prompt alone.
"""

import os
import sys

import pytest

os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # scheduler and worker in this process
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; num_gpu_blocks_override then rules
pytest.importorskip("vllm")

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tempokvd_fixture as fx  # noqa: E402

from tempokv.e2e import model as model_mod  # noqa: E402
from tempokv.e2e.daemon import live_claims  # noqa: E402
from tempokv.e2e.llm import build_llm, close_llm, drive, scheduler, worker_connector  # noqa: E402
from tempokv.e2e.prompts import make_prompts  # noqa: E402
from tempokv.vllm.digests import read_digests  # noqa: E402

CHUNK = 256
PROMPT = 888  # 7 blocks of 128 (the last holds 120): 3 whole chunks (768 tokens) restorable
OUTPUT = 16  # the 9th output token needs an 8th block
BLOCKS = 15  # two requests' 7 blocks, and one more


@pytest.fixture
def daemon():
    yield from fx.serve(["--set", "tier.capacity_bytes=256MiB", "--set", "tier.budget_bytes=192MiB"])


def outputs(llm, prompts, tag):
    """The tokens each prompt generated, all submitted at once as requests <tag>-<i>."""
    return [r["tokens"] for r in drive(llm, prompts, OUTPUT, rid_prefix=tag)]


def assert_same_outputs(got, want, what):
    differ = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert len(got) == len(want) and not differ, (
        f"{what}: the outputs of prompts {differ} differ: "
        + "; ".join(f"{i}: {got[i]} != {want[i]}" for i in differ))


def start_engine(daemon, tmp_path, seed, **connector):
    """A real engine with BLOCKS KV blocks on the local test model, its connector on daemon
    (plus the connector options given), and four cold prompts of PROMPT tokens from seed."""
    model_dir = os.environ.get("TEMPOKV_MODEL_DIR",
                               os.path.expanduser("~/.cache/tempokv/tiny-llama"))
    model_mod.build(model_dir)
    prompts = [p[:PROMPT] for p in make_prompts(4, seed, model_mod.GEOMETRY["vocab_size"],
                                                prefix_tokens=PROMPT, group=1)]
    digests = str(tmp_path / "digests")
    spec = {"model_dir": model_dir, "max_model_len": 1024, "max_num_seqs": 4,
            "max_num_batched_tokens": 2048, "num_gpu_blocks": BLOCKS}
    llm = build_llm(spec, {"endpoint": daemon.endpoint, "chunk_tokens": CHUNK,
                           "digest_file": digests, **connector})
    return llm, prompts, digests


def test_a_preempted_request_restores_its_prefix_again(daemon, tmp_path):
    llm, prompts, digests = start_engine(daemon, tmp_path, seed=7)
    try:
        conn = scheduler(llm).connector
        worker = worker_connector()
        alone = [outputs(llm, [p], f"a{i}")[0] for i, p in enumerate(prompts)]
        fx.wait_until(lambda: worker.saver.saved == 3 * len(prompts), "pass 1's 12 chunks saved",
                      60)
        assert conn._sched.requeued == 0, "one request at a time: nothing preempted"
        assert worker.loader.loaded_tokens == 0

        together = outputs(llm, prompts, "b")
        requeued = conn._sched.requeued
        assert requeued >= 1, "15 blocks for two 7-block requests that grow: vLLM preempts"
        # Every load, the first of each request and one after each preemption, restored the
        # three chunks: nothing was recomputed that tempokvd had.
        assert worker.loader.failed == 0
        assert worker.loader.loaded_tokens == (len(prompts) + requeued) * 3 * CHUNK
        conn.agent.flush(10.0)
        assert conn.agent.errors == 0, "cancelling a preempted request's released claim"
        assert all(len(t) == OUTPUT for t in together)
        # Greedy decoding over the restored prefix, preempted and restored again, generates
        # what each prompt generated alone.
        assert_same_outputs(together, alone, f"preempted {requeued}x, against pass 1")
    finally:
        close_llm(llm)
    saved, loaded = read_digests(digests, "save"), read_digests(digests, "load")
    assert loaded and all(saved.get(k) == v for k, v in loaded.items()), "restored KV differs"
    fx.wait_until(lambda: live_claims(daemon_stats(daemon)) == 0, "claims ended", 20)
    s = daemon_stats(daemon)
    assert s.get("tier_protected_bytes", 0) == 0 and s.get("tier_reserved_bytes", 0) == 0


def test_a_preempted_requests_saves_not_yet_copied_still_reach_the_store(daemon, tmp_path):
    """Cold prompts, all four at once, each save held 0.5 s before its copy: when vLLM preempts
    a request its saves are still queued, and its blocks are freed for the next forward pass.
    The worker copies them out before that pass (handle_preemptions); they used to be dropped
    (and, marked as saved, never saved again)."""
    llm, prompts, digests = start_engine(daemon, tmp_path, seed=8, test_save_delay_s=0.5)
    try:
        conn = scheduler(llm).connector
        worker = worker_connector()
        together = outputs(llm, prompts, "c")
        assert conn._sched.requeued >= 1, "15 blocks for requests that grow: vLLM preempts"
        fx.wait_until(lambda: not worker.saver.busy(), "the saver drained", 60)
        assert worker.saver.flushed >= 1, "no save was queued at the preemption: test too fast"
        assert worker.saver.dropped == 0 and worker.saver.failed == 0
        assert worker.saver.saved == 3 * len(prompts)
        from tempokv import TempoKVClient
        from tempokv.keys import chunk_keys
        with TempoKVClient(daemon.endpoint, name="probe", map_shared_memory=False) as c:
            for i, p in enumerate(prompts):
                sizes = c.lookup(chunk_keys(conn.model_id, p, CHUNK)[:3])
                assert all(n > 0 for n in sizes), f"prompt {i}: chunks missing: {sizes}"
        # And they restore: each prompt alone (no preemption) loads its three chunks.
        alone = [outputs(llm, [p], f"d{i}")[0] for i, p in enumerate(prompts)]
        assert worker.loader.failed == 0
        assert worker.loader.loaded_tokens == len(prompts) * 3 * CHUNK
        # The flushed saves hold the blocks as they were before the preemption freed them: a
        # copy after the next forward pass reused them would restore other KV (with matching
        # digests, as they are taken at the copy) and generate other tokens.
        assert_same_outputs(alone, together, "restored alone, against the cold pass")
    finally:
        close_llm(llm)
    saved, loaded = read_digests(digests, "save"), read_digests(digests, "load")
    assert loaded and all(saved.get(k) == v for k, v in loaded.items()), "restored KV differs"


def daemon_stats(daemon):
    from tempokv import TempoKVClient
    with TempoKVClient(daemon.endpoint, name="probe", map_shared_memory=False) as c:
        return c.stats()
