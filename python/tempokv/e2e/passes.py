"""One vLLM process of the e2e check (run by tempokv.e2e.run; imports vLLM).

    python -m tempokv.e2e.passes --spec SPEC.json --out OUT.json

SPEC lists runs executed in order, each with a fresh ``LLM`` in this process: ``connector``
(TempoKV connector and scheduler, vLLM's prefix caching on; with ``alter_loaded_block`` the first
block it loads gets one bit flipped, the check's negative control), ``reference`` (no
connector, vLLM's prefix cache warmed with each request's prefix restored by the run named in
``warm_from``, then the full prompts) and ``connector`` with ``kill_daemon_pid`` (SIGKILL to
tempokvd once the first request has its first token). A run with ``capture_kv`` records the
digests of each prompt's restorable blocks as vLLM's model runner lists them (``reference.py``). Each run records per request: output tokens,
prompt tokens vLLM took from a cache (``num_cached_tokens``), TTFT from submission; and the
connector's load counters. ``tp`` > 1 runs that many tensor-parallel workers in processes of
their own (the engine core stays in this process).
"""

import json
import os
import signal
import sys
import time

# Scheduler + worker in this process unless the spec says "multiprocess" (vLLM's default:
# EngineCore in a process of its own; the connector's counters then come through a file).
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")  # GiB

from .daemon import live_claims  # noqa: E402
from .llm import (agent, build_llm, close_llm, connector_counters, drive,  # noqa: E402
                  read_spec, worker_connector)
from .prompts import VOCAB_FIRST  # noqa: E402
from .reference import ReferenceKV  # noqa: E402


WARMUP_PROMPT = [VOCAB_FIRST + (i * 7919) % 1000 for i in range(64)]


def _llm(spec, run):
    extra = None
    if run["kind"] == "connector":
        extra = {"endpoint": spec["endpoint"], "chunk_tokens": spec["chunk_tokens"],
                 "load_timeout_s": 30.0}
        for k in ("digest_file", "test_load_delay_s", "counters_file"):
            if run.get(k):
                extra[k] = run[k]
        if run.get("alter_loaded_block"):
            extra["test_alter_loaded_block"] = True
    cls = ("tempokv.vllm.TempoKVAsyncScheduler" if spec.get("async_scheduling")
           else "tempokv.vllm.TempoKVScheduler")
    return build_llm(spec, extra, cls, prefix_caching=True,  # vLLM's default
                     async_scheduling=bool(spec.get("async_scheduling")))


def _file_counters(path):
    """The last counters each side of the connector wrote (counters_file), merged."""
    out = {}
    for c in _file_counters_each(path):
        for k, v in c.items():
            if k not in ("role", "pid"):
                out[k] = out.get(k, 0) + v
    return out


def _file_counters_each(path):
    """The last counters each process of the connector wrote (counters_file), one per process."""
    last = {}
    try:
        with open(path) as f:
            for line in f:
                try:
                    c = json.loads(line)
                except ValueError:
                    continue  # a line being written
                last[(c.get("role"), c.get("pid"))] = c
    except FileNotFoundError:
        return []
    return list(last.values())


MOMENTS = ("submitted", "taken", "connected", "requested", "ready_seen", "copy_started",
           "copy_ended")


def _load_timeline(t0):
    """The in-process worker's loads, each as its moments in seconds from ``t0`` (the prompts'
    submission), in MOMENTS order (None: not reached); [] when the worker is elsewhere."""
    c = worker_connector()
    if c is None or c.loader is None:
        return []
    return [[m["req_id"]] + [None if m.get(k) is None else round(m[k] - t0, 3) for k in MOMENTS]
            for m in c.loader.timeline]


def _agent_errors(llm):
    """Failed calls of the scheduler side's agent (None when the scheduler is not in-process)."""
    a = agent(llm)
    if a is None:
        return None
    a.flush(10.0)
    return a.errors


def _daemon_stats(endpoint):
    from tempokv import TempoKVClient
    with TempoKVClient(endpoint, name="e2e-check", map_shared_memory=False) as c:
        s = c.stats()
    return {"daemon_stats": s, "daemon_live_claims_after": live_claims(s),
            "daemon_protected_bytes_after": s.get("tier_protected_bytes", 0),
            "daemon_reserved_bytes_after": s.get("tier_reserved_bytes", 0)}


def run(spec):
    prompts = spec["prompts"]
    results = []
    for run in spec["runs"]:
        t = time.monotonic()
        llm = _llm(spec, run)
        init_s = time.monotonic() - t
        # One short request first, untimed: the first forward passes of a fresh engine pay one-time
        # costs (with two ranks ~3 s on the build VM) that are neither computing nor restoring a
        # prompt, and would sit in both passes' TTFTs. 64 tokens: no whole chunk, so nothing is
        # saved, looked up or cached from it.
        drive(llm, [WARMUP_PROMPT], 1, rid_prefix="warmup")
        after_step = reference = None
        if run["kind"] == "reference":
            # The prefix vLLM's own cache supplies: what the named run restored per request.
            src = next(r for r in results if r["name"] == run.get("warm_from", "pass2"))
            restored = [r["num_cached_tokens"] for r in src["requests"]]
            entry_restored = restored
            warm = [p[:n] for p, n in zip(prompts, restored) if n > 0]
            if warm:
                drive(llm, warm, 1)
        else:
            entry_restored = None
        if run.get("capture_kv"):
            # vLLM's own blocks of each prompt's restorable prefix (whole chunks before its
            # last token), as its model runner lists them.
            chunk = spec["chunk_tokens"]
            reference = ReferenceKV(llm, {f"r-{i}": (len(p) - 1) // chunk * chunk
                                          for i, p in enumerate(prompts)})
            after_step = reference.after_step
        if run.get("kill_daemon_pid"):
            pid, state = run["kill_daemon_pid"], {"done": False}

            def kill():
                # Once the first claim is loaded on every rank (a request restores only when
                # all its ranks loaded their shards): the other loads are in flight (each held
                # test_load_delay_s before its transfer) and must fail over to recompute.
                c = worker_connector()
                if c is not None:
                    ranks_loaded = int(c.loader.loaded_tokens > 0)
                elif run.get("counters_file"):
                    ranks_loaded = sum(1 for w in _file_counters_each(run["counters_file"])
                                       if w.get("role") == "worker"
                                       and w.get("loaded_tokens", 0) > 0)
                else:
                    ranks_loaded = 0
                if not state["done"] and ranks_loaded >= spec.get("tp", 1):
                    state["done"] = True
                    os.kill(pid, signal.SIGKILL)
            after_step = kill
        t = time.monotonic()
        reqs = drive(llm, prompts, spec["max_tokens"], after_step=after_step)
        entry = {"name": run["name"], "init_s": init_s, "run_s": time.monotonic() - t,
                 "load_timeline": _load_timeline(t),
                 "loadavg_1m": os.getloadavg()[0],
                 "requests": reqs, "connector": connector_counters(),
                 "agent_errors": _agent_errors(llm) if run["kind"] == "connector" else None,
                 "trimmed_claims": getattr(agent(llm), "trimmed_claims", None),
                 "warmed_prefix_tokens": entry_restored,
                 "block_size": llm.llm_engine.vllm_config.cache_config.block_size}
        if reference is not None:
            entry["runner_kv"] = [[req, rank, d] for (req, rank), d
                                  in sorted(reference.digests.items())]
        close_llm(llm)
        if run.get("counters_file") and not entry["connector"]:
            # The workers (or the whole engine) ran in processes of their own: the connector
            # wrote its counters (last at its shutdown, after the agent's flush), each worker
            # its own, summed here.
            fc = _file_counters(run["counters_file"])
            entry["connector"] = {k: fc[k] for k in ("loaded_tokens", "load_errors",
                                                     "saved_chunks", "save_failures",
                                                     "load_wait_s", "load_ready_wait_s",
                                                     "loader_cpu_s", "transfer_s") if k in fc}
            if entry["agent_errors"] is None:
                entry["agent_errors"] = fc.get("agent_errors")
        if run["kind"] == "connector" and not run.get("kill_daemon_pid"):
            entry.update(_daemon_stats(spec["endpoint"]))
        results.append(entry)
        print(f"tempokv e2e: {run['name']} done in {entry['run_s']:.1f} s", flush=True)
    return results


def main(argv=None):
    spec, out_path = read_spec(argv)
    if spec.get("multiprocess"):
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "1"
        # The KV reference (reference.py) sends a function to the engine core's process, which
        # vLLM's messages carry only pickled (this check's own processes, on one machine).
        os.environ.setdefault("VLLM_ALLOW_INSECURE_SERIALIZATION", "1")
        # Threads on a small shared machine: vLLM's CPU backend otherwise binds the worker's
        # OpenMP threads to every core it finds (2 here, spinning between parallel regions)
        # while the EngineCore process polls the worker on the same cores, and each spawned
        # process is pinned whatever else runs there. One compute thread, as the in-process
        # engine serves with (vLLM reduces its torch threads to 1), and no pinning: the
        # kernel places the worker, the EngineCore and this process. (Before: pass 1 of the
        # e2e check computed 151 tokens/s with EngineCore and worker apart, 460 in-process.)
    # In process too: with the OpenMP threads bound to both cores and spinning, the connector's
    # loader thread starved on a quiet machine; pass 2 waited ~15 s per request from load
    # submit to copy start and was no faster than pass 1 (3 runs: ratio 0.99-1.19). Unbound,
    # one thread: 29.9 -> 10.1 s, ratio 0.34 (one run, quiet machine).
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import vllm
    out = {"vllm_version": vllm.__version__, "runs": run(spec)}
    with open(out_path, "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
