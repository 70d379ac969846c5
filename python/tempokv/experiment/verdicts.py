"""The issue's targets, judged seed by seed: each target is a ratio (or a difference) of two
policies' results in the same seed, ratio and rate, so a seed whose prompts or machine load made
every policy slower does not move it. The verdict is the median over seeds against the limit,
with a distribution-free interval of that median and how many seeds met the limit on their own.

Why paired: a median of p95s over seeds divided by another median pairs nothing, and a p95 of
twelve requests moves by a tenth from run to run on this shared machine (docs/evaluation.md,
"On vLLM"); the interval says when the seeds run do not decide a target.
"""

import argparse
import json
import math
import statistics
import sys

from .rows import fold_repeats, invariants_hold

# (name, what is measured, limit, how it compares): each measure maps one seed's rows by
# policy to a value, or None where a policy it needs is missing; a limit of None is a reference
# shown beside the targets, not judged.
FIG4 = [
    ("C tempokv/immediate", lambda g: _ratio(g, "tempokv", "immediate", "c_gib_s_per_req"),
     0.5, "<="),
    ("p95 tempokv/demand", lambda g: _ratio(g, "tempokv", "demand", "p95_ttft_s"), 1.0, "<="),
    ("p95 tempokv/best(immediate, queue-4)", lambda g: _best(g, "tempokv"), 1.10, "<="),
    # Not a target: the same statistic for Immediate itself. The better of two noisy p95s is
    # biased low, so a policy no worse than Immediate scores about this (its noise floor).
    ("p95 immediate/best(immediate, queue-4), for reference", lambda g: _best(g, "immediate"),
     None, None),
    ("lateness p95 tempokv - static (s)",
     lambda g: _diff(g, "tempokv", "tempokv-static", "lateness_p95_s"), 0.0, "<"),
]


def _get(g, policy, field):
    r = g.get(policy)
    return None if r is None else r.get(field)


def _ratio(g, a, b, field):
    x, y = _get(g, a, field), _get(g, b, field)
    return x / y if x is not None and y else None


def _diff(g, a, b, field):
    x, y = _get(g, a, field), _get(g, b, field)
    return x - y if x is not None and y is not None else None


def _best(g, policy):
    t, im, q4 = (_get(g, p, "p95_ttft_s") for p in (policy, "immediate", "queue-4"))
    return t / min(im, q4) if None not in (t, im, q4) and min(im, q4) > 0 else None


def _vs_recompute(policy):
    """fig6: lower p95 and higher throughput than vLLM without the connector, as one value:
    the worse of p95(policy)/p95(recompute) and throughput(recompute)/throughput(policy)."""
    def measure(g):
        p95 = _ratio(g, policy, "recompute", "p95_ttft_s")
        thr = _ratio(g, "recompute", policy, "throughput_tok_s")
        return None if p95 is None or thr is None else max(p95, thr)
    return (f"{policy} vs recompute: max(p95 ratio, 1/throughput ratio)", measure, 1.0, "<")


def _reference(a, b, field, label):
    """For reference: ``a``'s ``field`` over ``b``'s."""
    return (f"{label} {a}/{b}", lambda g: _ratio(g, a, b, field), None, None)


FIG6 = [_vs_recompute("demand"), _vs_recompute("tempokv"),
        _reference("tempokv", "lmcache", "p95_ttft_s", "p95"),
        _reference("tempokv", "lmcache", "throughput_tok_s", "throughput"),
        # Each system against recompute on its own engine, measured beside it (LMCache's runs
        # come after TempoKV's, on another engine: these ratios are free of the drift between).
        _reference("tempokv", "recompute", "p95_ttft_s", "p95"),
        _reference("lmcache", "lmcache-cold", "p95_ttft_s", "p95"),
        _reference("tempokv", "recompute", "throughput_tok_s", "throughput"),
        _reference("lmcache", "lmcache-cold", "throughput_tok_s", "throughput")]


def median_interval(xs, confidence=0.95):
    """(lo, hi, coverage): the order statistics x_(j), x_(n+1-j) with the largest j whose
    interval still covers the median with probability >= confidence (binomial, no assumption on
    the distribution); with too few values for that, the range and its own coverage."""
    s, n = sorted(xs), len(xs)
    cover = lambda j: 1 - 2 * sum(math.comb(n, i) for i in range(j)) / 2 ** n  # noqa: E731
    j = 1
    while j + 1 <= n // 2 and cover(j + 1) >= confidence:
        j += 1
    return s[j - 1], s[n - j], cover(j)


def judge(rows, fold="mean"):
    """One dict per (scenario, ratio, rate) and target whose policies were run: ``values`` (by
    seed), ``median``, ``lo`` / ``hi`` / ``coverage`` (the median's interval), ``limit``, and
    for a target (a limit that is not None) ``seeds_met`` and ``met`` (the median against it).
    A seed whose policies ran more than once (``--repeats``) is judged on each policy's mean
    over its runs (``rows.fold_repeats``): the run-to-run noise of a p95 of twelve requests
    shrinks with the square root of the repeats, and the better of two policies' means is
    less biased low than the better of two single runs. ``fold="median"``: each policy's
    median over its runs instead (``rows.fold_repeats``)."""
    groups, repeats = {}, {}
    for r in fold_repeats(rows, fold):
        key = (r["scenario"], r["ratio"], r["rate"])
        groups.setdefault(key, {}).setdefault(r["seed"], {})[r["policy"]] = r
        repeats[key] = min(repeats.get(key, r["repeats"]), r["repeats"])
    out = []
    for (scenario, ratio, rate), seeds in sorted(groups.items()):
        for name, measure, limit, op in FIG4 + FIG6:
            values = {s: measure(g) for s, g in sorted(seeds.items())}
            values = {s: v for s, v in values.items() if v is not None}
            if not values:
                continue
            ok = (lambda v: v <= limit) if op == "<=" else (lambda v: v < limit)
            xs = list(values.values())
            med = statistics.median(xs)
            lo, hi, cov = median_interval(xs)
            v = {"scenario": scenario, "ratio": ratio, "rate": rate, "target": name,
                 "limit": limit, "op": op, "values": values, "median": med, "lo": lo, "hi": hi,
                 "coverage": cov, "repeats": repeats[(scenario, ratio, rate)], "fold": fold}
            if limit is not None:
                v.update(seeds_met=sum(map(ok, xs)), met=ok(med))
            out.append(v)
    return out


def lines(verdicts, rows):
    """One line per (scenario, ratio, rate): each target's median over seeds, its interval,
    seeds met, and met / MISSED; then whether the invariants held in every run of ``rows``
    there."""
    held = {}
    for r in rows:
        key = (r["scenario"], r["ratio"], r["rate"])
        held[key] = held.get(key, True) and invariants_hold(r)
    by = {}
    for v in verdicts:
        by.setdefault((v["scenario"], v["ratio"], v["rate"]), []).append(v)
    out = []
    for (scenario, ratio, rate), vs in by.items():
        parts = []
        for v in vs:
            part = f"{v['target']} {v['median']:.3f} [{v['lo']:.3f}, {v['hi']:.3f}]"
            if v["limit"] is not None:
                part += (f" ({v['op']} {v['limit']:g}: {'met' if v['met'] else 'MISSED'}, "
                         f"{v['seeds_met']}/{len(v['values'])} seeds)")
            parts.append(part)
        inv = held.get((scenario, ratio, rate), True)
        parts.append(f"invariants {'hold' if inv else 'FAIL'}")
        n = len(vs[0]["values"])
        cover = (f"[an interval covering the median {100 * vs[0]['coverage']:.0f} %]"
                 if n >= 3 else "[their range: too few seeds for an interval]")
        reps = vs[0].get("repeats", 1)
        each = (f" (each policy's {vs[0].get('fold', 'mean')} of {reps} runs)"
                if reps > 1 else "")
        out.append(f"{scenario} ratio {ratio:g} rate {rate:g}, medians over {n} seed"
                   f"{'s' if n > 1 else ''}{each} {cover}: " + "; ".join(parts))
    return out


def pooled_rows(docs):
    """The rows of several results of ``tempokv eval --mode vllm`` as one experiment: fig4's
    rate is the arrival rate each run calibrated from the engine's measured speed (one per
    ratio), so a ratio's rows from later files take the first file's rate and their seeds' runs
    count as repeats of the first's; fig6's rates are its sweep and stay apart."""
    rate = {}
    out = []
    for doc in docs:
        for r in doc["rows"]:
            r = dict(r)
            if r["scenario"] == "fig4-policies":
                r["rate"] = rate.setdefault((r["scenario"], r["ratio"]), r["rate"])
            out.append(r)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m tempokv.experiment.verdicts",
        description="the targets judged on one or more result files of the vLLM experiment "
                    "(several files: their runs pooled as repeats of one experiment)")
    ap.add_argument("files", nargs="+", help="JSON files of tempokv eval --mode vllm")
    ap.add_argument("--fold", choices=["mean", "median"], default="mean",
                    help="a seed's value of a policy: the mean (default) or the median of "
                         "its runs")
    a = ap.parse_args(argv)
    docs = []
    for path in a.files:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"verdicts: {path}: {e}", file=sys.stderr)
            return 2
        if not isinstance(doc, dict) or doc.get("mode") != "vllm" or "rows" not in doc:
            print(f"verdicts: {path}: not a result of tempokv eval --mode vllm", file=sys.stderr)
            return 2
        cal = doc.get("calibration") or {}
        if cal.get("busy"):
            print(f"verdicts: {path}: calibrated on a busy machine ({cal['foreign_cores']:.2f} "
                  "cores used by other processes): its arrivals and read caps were scaled to a "
                  "slower engine", file=sys.stderr)
        docs.append(doc)
    rows = pooled_rows(docs)
    for line in lines(judge(rows, a.fold), rows):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
