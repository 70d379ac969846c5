"""What the connector costs a request it cannot help: TTFT with the connector against without,
on a 0 % hit workload, on one engine.

    python -m tempokv.e2e.miss_ttft [--requests N] [--prompt-tokens T] [--json FILE]

One in-process engine (the e2e check's model, vLLM's prefix caching on) with the TempoKV
connector, against a tempokvd on an empty store. Distinct random prompts (nothing stored,
nothing shared: every lookup misses), submitted one at a time, one output token each; the
requests alternate between the connector on and the connector off (its scheduler side ignores
the request: no lookup, claim, load or save; the step snapshots stop), so drift on a busy machine
falls on both alike; each request starts once the saves of the one before are done (they are
that request's work, not this one's). Prints the TTFT p50 of each, their difference and ratio (the issue's
bound: within 2 % or 1 ms, whichever is larger).
"""

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")  # as the e2e check (docs/vllm.md)
os.environ.setdefault("OMP_NUM_THREADS", "1")

from . import model as model_mod  # noqa: E402
from .daemon import Daemon, default_tempokvd  # noqa: E402

CHUNK = 256


def _one(llm, prompt, rid):
    from .llm import drive, worker_connector
    saver = worker_connector().saver
    deadline = time.monotonic() + 60
    while saver.busy() and time.monotonic() < deadline:
        time.sleep(0.01)  # the last request's saves copied and put: not this one's cost
    (r,) = drive(llm, [prompt], 1, 0.0, rid)
    return r["ttft_s"], r["num_cached_tokens"]


def measure(llm, n, prompt_tokens, seed=20261204):
    from ..experiment.engine import connector_off
    r = random.Random(seed)
    vocab = model_mod.GEOMETRY["vocab_size"]
    on, off, cached = [], [], 0
    for i in range(2 * n + 2):
        prompt = [r.randrange(3, vocab) for _ in range(prompt_tokens)]
        connector = i % 2 == 0
        if connector:
            t, c = _one(llm, prompt, f"on{i}")
        else:
            with connector_off(llm):
                t, c = _one(llm, prompt, f"off{i}")
        cached += c
        if i >= 2:  # the first pair warms the engine up
            (on if connector else off).append(t)
    return on, off, cached


def result(on, off, cached):
    p_on, p_off = statistics.median(on), statistics.median(off)
    diff = p_on - p_off
    bound = max(0.02 * p_off, 0.001)
    return {"requests_each": len(on), "ttft_p50_connector_s": round(p_on, 5),
            "ttft_p50_without_s": round(p_off, 5), "difference_s": round(diff, 5),
            "ratio": round(p_on / p_off, 4), "bound_s": round(bound, 5),
            "within_bound": diff <= bound, "cached_tokens": cached,
            "ttft_connector_s": [round(x, 4) for x in on],
            "ttft_without_s": [round(x, 4) for x in off]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=20, help="requests with, and without")
    ap.add_argument("--prompt-tokens", type=int, default=1024)
    ap.add_argument("--json")
    ap.add_argument("--model-dir", default=os.environ.get(
        "TEMPOKV_MODEL_DIR", os.path.expanduser("~/.cache/tempokv/tiny-llama")))
    ap.add_argument("--tempokvd", default=os.environ.get("TEMPOKVD") or default_tempokvd(
        ("build/debug", "build/release", "build")))
    a = ap.parse_args(argv)
    if not a.tempokvd or not os.access(a.tempokvd, os.X_OK):
        print("miss_ttft: no tempokvd binary (build it, or set TEMPOKVD)", file=sys.stderr)
        return 2
    from .llm import build_llm, close_llm
    model_mod.build(a.model_dir)
    work = tempfile.mkdtemp(prefix="tempokv-miss-ttft-")
    data = os.path.join(work, "data")
    os.makedirs(data)
    daemon = Daemon(a.tempokvd, data)
    try:
        spec = {"model_dir": a.model_dir, "max_model_len": 8192, "max_num_seqs": 4,
                "max_num_batched_tokens": 2048}
        llm = build_llm(spec, {"endpoint": daemon.endpoint, "chunk_tokens": CHUNK},
                        prefix_caching=True)
        time.sleep(1.0)  # the agent's and links' hellos
        res = result(*measure(llm, a.requests, a.prompt_tokens))
        from .llm import agent, scheduler
        lk = sorted(agent(llm).lookup_s)
        res["lookups"] = len(lk)  # each: queued by on_new_request -> its answer published
        # Misses the daemon's key filter answered at once (no lookup, no wait).
        res["filtered_misses"] = scheduler(llm).connector._sched.filtered_misses
        res["lookup_p50_s"] = round(lk[len(lk) // 2], 5) if lk else None
        close_llm(llm)
    finally:
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(res, indent=2)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    print(f"miss_ttft: TTFT p50 with the connector {res['ttft_p50_connector_s'] * 1e3:.1f} ms, "
          f"without {res['ttft_p50_without_s'] * 1e3:.1f} ms: difference "
          f"{res['difference_s'] * 1e3:+.2f} ms (bound {res['bound_s'] * 1e3:.2f} ms), ratio "
          f"{res['ratio']:.3f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
