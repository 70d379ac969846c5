"""One pass of LMCache on vLLM's CPU backend, in a process of its own (the restore test runs
two: the first stores, a fresh one restores from the same ``fs://`` store).

    PYTHONHASHSEED=0 python -m tempokv.experiment.lmcache_check --store DIR --json OUT
        [--prompts N] [--prompt-tokens T] [--max-tokens K] [--seed S]

Runs N seeded prompts of T tokens one after another on an in-process engine (prefix caching
on, LMCache on DIR, greedy) and writes each prompt's output tokens and ``num_cached_tokens``
(the tokens vLLM did not compute: LMCache's restored ones, as vLLM's own cache holds none of a
fresh engine's prompts), and LMCache's counters (``lmcache_adapter.counters``). Needs the
lmcache environment (scripts/install-lmcache) and the tiny model (tempokv.e2e.model).
"""

import argparse
import json
import os
import random
import sys

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from ..e2e import model as model_mod  # noqa: E402
from ..e2e.llm import build_llm, drive  # noqa: E402
from . import lmcache_adapter  # noqa: E402
from .plan import random_prompt  # noqa: E402

CACHE = os.path.expanduser(os.environ.get("TEMPOKV_CACHE", "~/.cache/tempokv"))
CHUNK = 256


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tempokv.experiment.lmcache_check")
    ap.add_argument("--store", required=True, help="LMCache's fs:// directory")
    ap.add_argument("--json", required=True)
    ap.add_argument("--prompts", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=700)
    ap.add_argument("--max-tokens", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--model-dir", default=os.path.join(CACHE, "tiny-llama"))
    a = ap.parse_args(argv)
    model_mod.build(a.model_dir)
    r = random.Random(a.seed)
    prompts = [random_prompt(r, a.prompt_tokens) for _ in range(a.prompts)]
    spec = {"model_dir": a.model_dir, "max_model_len": 4096, "max_num_seqs": 4,
            "max_num_batched_tokens": 2048}
    llm = build_llm(spec, prefix_caching=True,
                    kv_transfer_config=lmcache_adapter.transfer_config(a.store, CHUNK))
    res = []
    for i, p in enumerate(prompts):  # one at a time: each store ends before the next
        res += drive(llm, [p], a.max_tokens, rid_prefix=f"check{i}")
    stored = lmcache_adapter.wait_stored()
    out = {"requests": [{"tokens": q["tokens"], "num_cached_tokens": q["num_cached_tokens"],
                         "prompt_tokens": q["prompt_tokens"]} for q in res],
           "restorable_tokens": [(len(p) - 1) // CHUNK * CHUNK for p in prompts],
           "counters": lmcache_adapter.counters(), "stored": stored}
    with open(a.json, "w") as f:
        json.dump(out, f)
    # LMCache 0.5.6's threads keep an interpreter from exiting after vLLM's shutdown (it
    # waited there > 10 min): its writes have ended (wait_stored), so leave without it.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
