"""The experiment's ``lmcache`` runs (tempokv.experiment.engine runs them last, in the same
process, once TempoKV's engine is closed).

One engine with vLLM's LMCache connector on the CPU backend (``lmcache_adapter``; the
engine's process was started with PYTHONHASHSEED=0 in the lmcache environment), built like
TempoKV's: the same model, limits, scheduler settings and prefix caching. Its ``fs://`` store
is one directory for the engine's life; each seed's store is precomputed there once (the
stored prefixes run through LMCache, as TempoKV's are through its connector) and cached beside
TempoKV's, and each run starts from a fresh copy of it, at the run's read cap, with nothing in
LMCache's memory (no local CPU tier) or vLLM's prefix cache.
"""

import os
import shutil
import time

from ..e2e.llm import build_llm, drive
from . import lmcache_adapter
from .engine import Phases, _blocks, release_blocks
from .plan import LMCACHE


def _fill(fs_dir, src=None):
    """Empties ``fs_dir`` (kept: LMCache's connector holds its path), then copies ``src``'s
    objects into it."""
    for name in os.listdir(fs_dir):
        os.unlink(os.path.join(fs_dir, name))
    for name in os.listdir(src) if src else []:
        shutil.copy2(os.path.join(src, name), os.path.join(fs_dir, name))


def _objects(d):
    return sum(1 for n in os.listdir(d) if n.endswith(".data"))


def precompute(llm, store, fs_dir):
    """Runs each stored prefix once through LMCache (one output token); its whole chunks,
    written to ``fs_dir``, are the store, moved to ``store['data_dir']``."""
    _fill(fs_dir)
    lmcache_adapter.set_read_cap(0)
    drive(llm, store["prefixes"], 1, 0.0, f"pre{store['key']}")
    done = lmcache_adapter.wait_stored(120.0)
    release_blocks(llm, f"pre{store['key']}")
    if not done or _objects(fs_dir) != store["chunks"]:
        raise RuntimeError(f"LMCache's precompute of {store['key']}: {_objects(fs_dir)} objects "
                           f"written (writes ended: {done}), {store['chunks']} expected")
    tmp = store["data_dir"] + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(fs_dir, tmp)
    os.rename(tmp, store["data_dir"])


def measured_run(llm, spec, run, prompts, fs_dir):
    phase = Phases()
    _fill(fs_dir, run["store_dir"])
    cap = run.get("read_cap") or spec["protocol"]["read_bytes_per_s"] or 0.0
    lmcache_adapter.set_read_cap(cap)
    phase("copy_store")
    before, cpu = lmcache_adapter.counters(), time.process_time()
    t = time.monotonic()
    reqs = drive(llm, prompts, spec["max_tokens"], run["interval_s"], run["name"], t0=t)
    entry = {"name": run["name"], "run_s": time.monotonic() - t, "requests": reqs, "t0_s": t,
             "interval_s": run["interval_s"], "rate": run["rate"],
             "engine_cpu_s": time.process_time() - cpu, "read_bytes_per_s": cap}
    phase("requests")
    writes_done = lmcache_adapter.wait_stored(60.0)
    entry["flush_requests"] = release_blocks(llm, run["name"])
    phase("release_blocks")
    after = lmcache_adapter.counters()
    d = {k: after[k] - before[k] for k in after}
    # The fields rows.row reads, in the TempoKV connector's names where they mean the same.
    entry["connector"] = {"loaded_tokens": d["retrieved_tokens"],
                          "load_errors": d["retrieves_short"], "restores": d["retrieves"],
                          "restore_s": d["retrieve_s"], "writes_done": writes_done, **d}
    entry.update(_blocks(llm))
    entry["phases_s"] = dict(phase)
    return entry


def run(spec, runs, out, precompute_all, measure):
    """Precomputes the missing LMCache stores and measures ``runs`` on an engine with LMCache
    (``precompute_all``, ``measure``: engine.run's, which record them in ``out``)."""
    fs_dir = os.path.join(spec["work"], "lmcache-fs")
    os.makedirs(fs_dir, exist_ok=True)
    t = time.monotonic()
    llm = build_llm(spec, prefix_caching=True, kv_transfer_config=lmcache_adapter.transfer_config(
        fs_dir, spec["chunk_tokens"]))
    out["init_s"][LMCACHE] = time.monotonic() - t
    precompute_all(LMCACHE, lambda store: precompute(llm, store, fs_dir))
    measure(runs, lambda r, prompts: measured_run(llm, spec, r, prompts, fs_dir))
