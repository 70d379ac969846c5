"""Rows of the experiment, with the sim/real eval's field names (docs/evaluation.md), and their
medians over seeds."""

import statistics

from . import plan

GIB = float(1 << 30)


def percentile(xs, q):
    """numpy's default (linear between order statistics), as src/common/percentile.h."""
    xs = sorted(xs)
    if not xs:
        return 0.0
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def row(run, entry, p, kv_bytes_per_token, model):
    reqs = entry["requests"]
    done = [q for q in reqs if q["finished_s"] is not None and q["tokens"] is not None]
    ttft = [q["first_token_s"] - q["arrival_s"] for q in done if q["first_token_s"] is not None]
    out_tokens = sum(len(q["tokens"]) for q in done)
    makespan = max((q["finished_s"] for q in done), default=0.0)  # from the first arrival
    restored = [q["num_cached_tokens"] for q in reqs]
    conn = entry.get("connector", {})
    s = entry.get("daemon_stats", {})
    n = max(1, len(done))
    rate = plan.cap_at(p, run["ratio"]) or s.get("staging_rate_bytes_per_second") or 0
    staged_bytes = [t * kv_bytes_per_token for t in restored]
    copied = "transfer_byte_s" in conn and run["label"] != "recompute"
    # Time to restore: from the worker starting a load to its KV in vLLM's blocks, per load.
    # TempoKV: the loader's wait for the claim plus its copy (vLLM computes meanwhile);
    # LMCache: its retrieve (store reads at the cap and the copy; the step waits for it).
    if "restores" in conn:
        restores, restore_s = conn["restores"], conn["restore_s"]
    else:
        restores = conn.get("transfers", 0)
        restore_s = conn.get("load_wait_s", 0.0) + conn.get("transfer_s", 0.0)
    copy_byte_s = conn.get("transfer_byte_s", 0.0)
    r = {
        "scenario": run["scenario"], "policy": run["label"], "model": model,
        "seed": run["seed"], "repeat": run.get("repeat", 0), "ratio": run["ratio"],
        "rate": entry["rate"],
        "interval_s": entry["interval_s"], "engines": 1,
        "requests": len(reqs), "completed": len(done), "output_tokens": out_tokens,
        "p50_ttft_s": percentile(ttft, 0.50), "p95_ttft_s": percentile(ttft, 0.95),
        "p99_ttft_s": percentile(ttft, 0.99),
        "mean_ttft_s": statistics.mean(ttft) if ttft else 0.0,
        "throughput_tok_s": out_tokens / makespan if makespan > 0 else 0.0,
        "makespan_s": makespan,
        "c_gib_s_per_req": s.get("protected_gib_seconds_total", 0.0) / n,
        # As the sim's (src/eval/metrics.h): each loaded footprint held while the worker copied
        # it (begin_transfer to end_transfer, measured by the loader), and with staging also
        # while read at the capped SSD rate.
        "c_floor_gib_s_per_req": copy_byte_s / GIB / n if copied else None,
        "c_floor_staging_gib_s_per_req": ((sum(b / GIB * b / rate for b in staged_bytes)
                                           + copy_byte_s / GIB) / n if rate else None),
        "transfer_s_total": conn.get("transfer_s"),
        "restores": restores,
        "time_to_restore_s": restore_s / restores if restores else None,
        "refused_commits": s.get("claims_refused_total", 0),
        "refused_attempts": s.get("commits_refused_total", 0),
        "commits": s.get("commits_total", 0),
        "ordinary_retrievals": s.get("claims_ordinary_total", 0),
        "staged_retrievals": sum(1 for t in restored if t > 0),
        "no_hit": sum(1 for t in restored if t == 0),
        "recomputes": conn.get("load_errors", 0),
        "restored_tokens": sum(restored),
        "prompt_tokens_computed": sum(q["prompt_tokens"] - q["num_cached_tokens"] for q in reqs),
        "ttu_err_p50_s": s.get("ttu_error_p50_seconds"),
        "ttu_err_p95_s": s.get("ttu_error_p95_seconds"),
        "ttr_err_p50_s": s.get("ttr_error_p50_seconds"),
        "ttr_err_p95_s": s.get("ttr_error_p95_seconds"),
        "timed_claims": s.get("timed_claims_total"),
        "late_claims": s.get("late_claims_total"),
        "lateness_p50_s": s.get("lateness_p50_seconds"),
        "lateness_p95_s": s.get("lateness_p95_seconds"),
        "load_errors": conn.get("load_errors"),
        "saved_chunks": conn.get("saved_chunks"),
        "save_failures": conn.get("save_failures"),
        "agent_errors": entry.get("agent_errors"),
        "lmcache_writes_done": conn.get("writes_done"),
        "cached_equals_loaded": sum(restored) == conn.get("loaded_tokens", 0),
        "kv_blocks_total": entry.get("kv_blocks_total"),
        "kv_blocks_free_after": entry.get("kv_blocks_free_after"),
        "daemon_live_claims_after": entry.get("daemon_live_claims_after"),
        "daemon_protected_bytes_after": s.get("tier_protected_bytes"),
        "daemon_reserved_bytes_after": s.get("tier_reserved_bytes"),
        "staging_rate_bytes_per_s": s.get("staging_rate_bytes_per_second"),
        # The adapter's calibration at the run's end: vLLM's measured steps / the profile's
        # (cpu-small) cost of them; what every projected TTU is scaled by.
        "adapter_cost_scale": next((v for k, v in s.items()
                                    if k.startswith("adapter_cost_scale")), None),
        "adapter_decode_scale": next((v for k, v in s.items()
                                      if k.startswith("adapter_decode_scale")), None),
        # The engine's hello declared asynchronous loads (they hold no slot), and the worker's
        # measured copies / the profile's retrieval cost of them (0: none measured); the largest
        # over the daemon's runtimes (the driver's probes have their own, idle ones).
        "adapter_async_loads": max((v for k, v in s.items()
                                    if k.startswith("adapter_async_loads")), default=None),
        "adapter_load_scale": max((v for k, v in s.items()
                                   if k.startswith("adapter_load_scale")), default=None),
        "wall_s": entry["run_s"],
        "engine_cpu_s": entry.get("engine_cpu_s"),
        "daemon_cpu_s": entry.get("daemon_cpu_s"),
        "phases_s": entry.get("phases_s"),  # the run's wall time by phase, requests included
        "histograms": entry.get("histograms", {}),
        "claims": claim_rows(entry),
        "_tokens": [q["tokens"] for q in reqs],
    }
    return r


CLAIM_TIMES = ("reported", "committed", "ready", "retrieval_requested", "transfer_start",
               "transfer_end", "released", "projected_use_at_commit",
               "projected_use_before_request")


def claim_rows(entry):
    """tempokvd's ended claims (/claims) with their times in seconds from the run's first
    arrival, as the requests' are, in the order they were reported (the requests' arrival order:
    every request reports its hit when it arrives), each beside the request it belongs to
    (``arrival_s``, ``first_token_s``)."""
    t0 = entry.get("t0_s")
    claims = sorted(entry.get("claims") or [], key=lambda c: c.get("reported_s") or 0.0)
    if t0 is None:
        return []
    with_hit = [q for q in entry["requests"] if q["num_cached_tokens"] > 0]
    out = []
    for i, c in enumerate(claims):
        r = {k: c[k] for k in ("request", "runtime", "footprint_bytes", "ordinary", "refused",
                               "ordinary_only", "cancelled", "failure", "ttr_at_commit_s")}
        for k in CLAIM_TIMES:
            v = c.get(k + "_s")
            r[k + "_s"] = None if v is None else v - t0
        if len(claims) == len(with_hit):
            q = with_hit[i]
            r["arrival_s"], r["first_token_s"] = q["arrival_s"], q["first_token_s"]
        out.append(r)
    return out


def mark_identical(rows):
    """outputs_identical: a row's tokens equal those of every other run on the same prompts
    (same seed; greedy decoding, so no policy may change a token)."""
    groups = {}
    for r in rows:
        groups.setdefault(r["seed"], []).append(r)
    for group in groups.values():
        ref = group[0]["_tokens"]
        same = all(g["_tokens"] == ref for g in group)
        for g in group:
            g["outputs_identical"] = same and all(t is not None for t in g["_tokens"])
    for r in rows:
        del r["_tokens"]


def invariants_hold(r):
    """All complete, outputs identical, no load failed, no KV carried over, daemon drained."""
    ok = (r["completed"] == r["requests"] and r["outputs_identical"]
          and r["kv_blocks_free_after"] == r["kv_blocks_total"] and r["cached_equals_loaded"])
    if r["policy"] in plan.LMCACHE_POLICIES:
        ok = ok and r["load_errors"] == 0 and r["lmcache_writes_done"]
        if r["policy"] == plan.LMCACHE_COLD:
            ok = ok and r["restored_tokens"] == 0
    elif r["policy"] != "recompute":
        ok = ok and (r["load_errors"] == 0 and r["agent_errors"] == 0
                     and r["daemon_live_claims_after"] == 0
                     and r["daemon_protected_bytes_after"] == 0
                     and r["daemon_reserved_bytes_after"] == 0)
    else:
        ok = ok and r["restored_tokens"] == 0
    return ok


MEDIAN_FIELDS = ["p50_ttft_s", "p95_ttft_s", "mean_ttft_s", "throughput_tok_s",
                 "time_to_restore_s",
                 "c_gib_s_per_req", "lateness_p50_s", "lateness_p95_s", "late_claims",
                 "ttu_err_p50_s", "ttu_err_p95_s", "ttr_err_p50_s", "ttr_err_p95_s",
                 "engine_cpu_s", "daemon_cpu_s"]


FOLDS = {"mean": statistics.mean, "median": statistics.median}


def fold_repeats(rows, fold="mean"):
    """One row per (scenario, ratio, rate, policy, seed): the mean (``fold="median"``: the
    median) over that seed's repeated runs (``--repeats``) of each of MEDIAN_FIELDS a run has,
    with ``repeats`` (how many runs) and ``runs`` (their rows). A seed run once gives its
    row's values. The median is for runs pooled from several files: one run slowed by the
    machine (a p95 twice its repeats') moves a mean of four by a quarter of that, a median
    not at all."""
    of = FOLDS[fold]
    groups = {}
    for r in rows:
        key = (r["scenario"], r["ratio"], r["rate"], r["policy"], r["seed"])
        groups.setdefault(key, []).append(r)
    out = []
    for (scenario, ratio, rate, policy, seed), g in groups.items():
        m = {"scenario": scenario, "model": g[0].get("model"), "ratio": ratio, "rate": rate,
             "policy": policy, "seed": seed, "repeats": len(g), "runs": g}
        for f in MEDIAN_FIELDS:
            xs = [r[f] for r in g if r.get(f) is not None]
            if xs:
                m[f] = of(xs)
        out.append(m)
    return out


def medians(rows):
    """One row per (scenario, ratio, rate, policy): the median over seeds of MEDIAN_FIELDS
    (of each seed's mean over its repeats: ``fold_repeats``), with ``<field>_min`` /
    ``<field>_max`` (the interval the seeds span)."""
    groups = {}
    for r in fold_repeats(rows):
        groups.setdefault((r["scenario"], r["ratio"], r["rate"], r["policy"]), []).append(r)
    out = []
    for (scenario, ratio, rate, policy), g in groups.items():
        m = {"scenario": scenario, "model": g[0]["model"], "ratio": ratio, "rate": rate,
             "policy": policy,
             "seeds": [r["seed"] for r in g], "repeats": [r["repeats"] for r in g],
             "invariants_hold": all(invariants_hold(x) for r in g for x in r["runs"])}
        for f in MEDIAN_FIELDS:
            xs = [r[f] for r in g if r.get(f) is not None]
            if xs:
                m[f] = statistics.median(xs)
                m[f + "_min"], m[f + "_max"] = min(xs), max(xs)
        out.append(m)
    return out
