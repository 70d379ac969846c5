"""vLLM's offline engine as the vLLM checks drive it (scripts/vllm-e2e's passes, the policy
experiment's engine process, the preemption test): built with or without the TempoKV
connector, driven through a list of prompts, closed so that the next one can start in the same
process, and the connector's two sides found in it.

Imports vLLM lazily: callers set VLLM_ENABLE_V1_MULTIPROCESSING / VLLM_CPU_KVCACHE_SPACE first.
"""

import argparse
import gc
import glob
import json
import os
import time


def read_spec(argv=None):
    """An engine process's command line: ``--spec``, the JSON file its driver wrote, and
    ``--out``, where the process writes its results. Returns (spec, out path)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    with open(a.spec) as f:
        return json.load(f), a.out


def build_llm(spec, connector_extra=None, scheduler_cls="tempokv.vllm.TempoKVAsyncScheduler",
              prefix_caching=False, async_scheduling=True, kv_transfer_config=None):
    """``LLM`` over ``spec``'s model and limits (float32, eager, greedy-ready; ``tp`` ranks;
    vLLM's own prefix cache where ``prefix_caching``: the e2e and the experiment turn it on,
    vLLM's default).
    With ``connector_extra`` (the connector's extra config) the TempoKV connector and
    ``scheduler_cls`` are plugged in, failed loads recomputed; ``kv_transfer_config``: another
    connector (vLLM's scheduler)."""
    from vllm import LLM

    kw = dict(model=spec["model_dir"], dtype="float32", enforce_eager=True, seed=0,
              max_model_len=spec["max_model_len"], max_num_seqs=spec["max_num_seqs"],
              max_num_batched_tokens=spec["max_num_batched_tokens"],
              enable_prefix_caching=prefix_caching, async_scheduling=async_scheduling)
    if spec.get("num_gpu_blocks"):  # a KV cache this small (tests that need preemption)
        kw["num_gpu_blocks_override"] = spec["num_gpu_blocks"]
    if spec.get("tp", 1) > 1:  # workers in processes of their own (gloo on the CPU backend)
        kw.update(tensor_parallel_size=spec["tp"], distributed_executor_backend="mp")
    if connector_extra is not None:
        kw["kv_transfer_config"] = {
            "kv_connector": "TempoKVConnector", "kv_connector_module_path": "tempokv.vllm",
            "kv_role": "kv_both", "kv_load_failure_policy": "recompute",
            "kv_connector_extra_config": connector_extra}
        kw["scheduler_cls"] = scheduler_cls
    elif kv_transfer_config is not None:
        kw["kv_transfer_config"] = kv_transfer_config
    return LLM(**kw)


def drive(llm, prompts, max_tokens, interval_s=0.0, rid_prefix="r", t0=None, after_step=None):
    """Submits prompt i as request ``<rid_prefix>-<i>`` at i × interval_s (a timer around
    add_request: arrivals do not wait for completions), greedy, ``max_tokens`` tokens each, and
    steps the engine until every request finished, calling ``after_step()`` after each step.
    Per prompt: its arrival, submission, first token and finish in seconds from the first
    arrival (``t0``, ``time.monotonic()``, by default when called), ``ttft_s`` (from the
    scheduled arrival: a step in progress delays the add_request itself, not the clock the
    user sees), its ``tokens`` and ``num_cached_tokens``."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    engine = llm.llm_engine
    sp = SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True)
    n = len(prompts)
    res = [{"arrival_s": i * interval_s, "prompt_tokens": len(p), "submitted_s": None,
            "first_token_s": None, "ttft_s": None, "finished_s": None, "tokens": None,
            "num_cached_tokens": 0}
           for i, p in enumerate(prompts)]
    index = {f"{rid_prefix}-{i}": i for i in range(n)}
    t0 = time.monotonic() if t0 is None else t0
    nxt = 0
    while nxt < n or engine.has_unfinished_requests():
        now = time.monotonic() - t0
        while nxt < n and res[nxt]["arrival_s"] <= now:
            engine.add_request(f"{rid_prefix}-{nxt}", TokensPrompt(prompt_token_ids=prompts[nxt]),
                               sp)
            res[nxt]["submitted_s"] = time.monotonic() - t0
            nxt += 1
        if not engine.has_unfinished_requests():
            time.sleep(max(0.0, min(0.05, res[nxt]["arrival_s"] - now)))
            continue
        outs = engine.step()
        if not outs:
            time.sleep(0.001)  # nothing came out (waiting for loads, or a prefill chunk)
        for out in outs:
            r = res[index[out.request_id]]
            toks = out.outputs[0].token_ids if out.outputs else []
            t = time.monotonic() - t0
            if toks and r["first_token_s"] is None:
                r.update(first_token_s=t, ttft_s=t - r["arrival_s"])
            if out.finished:
                r.update(finished_s=t, tokens=list(toks),
                         num_cached_tokens=out.num_cached_tokens or 0)
        if after_step:
            after_step()
    return res


def _shm_ident(worker):
    return os.environ.get("VLLM_DIST_IDENT")


def close_llm(llm):
    from vllm.distributed import cleanup_dist_env_and_memory
    idents = set()
    try:
        if llm.llm_engine.vllm_config.parallel_config.world_size > 1:
            idents = {i for i in llm.collective_rpc(_shm_ident) if i}
    except Exception:
        pass
    try:
        llm.llm_engine.engine_core.shutdown()
    except Exception:
        pass
    del llm
    gc.collect()
    cleanup_dist_env_and_memory()
    # vLLM's CPU backend leaves its ranks' shared-memory segments behind (8 MB per engine of
    # two ranks), named after the engine's distributed identity.
    for ident in idents:
        for path in glob.glob(os.path.join("/dev/shm", glob.escape(ident) + "-*")):
            try:
                os.unlink(path)
            except OSError:
                pass


def scheduler(llm):
    """vLLM's scheduler (in-process engine only: AttributeError otherwise)."""
    return llm.llm_engine.engine_core.engine_core.scheduler


def agent(llm):
    """The connector's scheduler-side agent, or None (no connector, or not in-process)."""
    try:
        return scheduler(llm).connector.agent
    except AttributeError:
        return None


def worker_connector():
    """This process's worker-side TempoKV connector, or None."""
    from vllm.distributed.kv_transfer import get_kv_transfer_group, has_kv_transfer_group
    if not has_kv_transfer_group():
        return None
    c = get_kv_transfer_group()
    return c if getattr(c, "loader", None) is not None else None


def connector_counters():
    """The worker side's load and save counters ({} without an in-process worker connector)."""
    c = worker_connector()
    if c is None:
        return {}
    c = c.counters()
    return {k: v for k, v in c.items() if k != "role"}
