"""Per-claim timing of a ``tempokv eval --mode vllm`` JSON (rows with ``claims``).

    python -m tempokv.experiment.claims FILE [--policy P] [--seed N] [--ratio R]

For each row: one line per claim (times in seconds from the run's first arrival) and where its
byte-time went: hold = staging (commit to ready) + early (ready to retrieval request, when ready
first) + copy (the later of retrieval request and ready, to release); waiting (retrieval request
to ready, when late) is the part of staging the engine waited through. ``C`` is footprint × hold summed over the claims, in GiB·s per
request as the rows' ``c_gib_s_per_req`` (which also counts reservations)."""

import argparse
import json
import sys

GIB = float(1 << 30)


def _d(a, b):
    return None if a is None or b is None else a - b


def parts(c):
    """The claim's hold = staging + early + copy, and the waiting inside staging (seconds; None
    when a time is unknown)."""
    com, rdy, req, rel = (c.get(k + "_s") for k in ("committed", "ready", "retrieval_requested",
                                                    "released"))
    if None in (com, rdy, req, rel):
        return None
    return {"staging": rdy - com, "early": max(0.0, req - rdy), "waiting": max(0.0, rdy - req),
            "copy": rel - max(req, rdy), "hold": rel - com}


def table(row, out=sys.stdout):
    claims = row.get("claims") or []
    print(f"# {row['policy']} seed {row['seed']} ratio {row['ratio']:g}: "
          f"C {row['c_gib_s_per_req']:.4f} GiB·s/req, p95 TTFT {row['p95_ttft_s']:.2f} s", file=out)
    print(f"{'#':>3} {'arrive':>7} {'commit':>7} {'c-arr':>6} {'proj':>7} {'use':>7} "
          f"{'ttu_err':>7} {'ready':>7} {'late':>6} {'hold':>6} {'early':>6} {'MiB':>5}", file=out)
    sums = {"staging": 0.0, "early": 0.0, "waiting": 0.0, "copy": 0.0, "hold": 0.0}
    for i, c in enumerate(claims):
        f = c["footprint_bytes"] / GIB
        p = parts(c)
        if p:
            for k in sums:
                sums[k] += f * p[k]

        def s(v, w=7):
            return f"{v:{w}.2f}" if v is not None else " " * (w - 1) + "-"
        print(f"{i:>3} {s(c.get('arrival_s'))} {s(c['committed_s'])} "
              f"{s(_d(c['committed_s'], c.get('arrival_s')), 6)} "
              f"{s(c['projected_use_at_commit_s'])} {s(c['retrieval_requested_s'])} "
              f"{s(_d(c['retrieval_requested_s'], c['projected_use_at_commit_s']))} "
              f"{s(c['ready_s'])} {s(_d(c['ready_s'], c['retrieval_requested_s']), 6)} "
              f"{s(p['hold'] if p else None, 6)} {s(p['early'] if p else None, 6)} "
              f"{c['footprint_bytes'] / (1 << 20):5.0f}", file=out)
    n = max(1, row.get("completed") or len(claims))
    print("byte-time, GiB·s/req: " + ", ".join(f"{k} {v / n:.4f}" for k, v in sums.items()),
          file=out)
    return {k: v / n for k, v in sums.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--policy")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--ratio", type=float)
    a = ap.parse_args(argv)
    rows = json.load(open(a.file))["rows"]
    for r in rows:
        if ((a.policy and r["policy"] != a.policy) or (a.seed and r["seed"] != a.seed)
                or (a.ratio and abs(r["ratio"] - a.ratio) > 1e-9) or not r.get("claims")):
            continue
        table(r)
        print()


if __name__ == "__main__":
    main()
