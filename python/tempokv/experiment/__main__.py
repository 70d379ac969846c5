"""python -m tempokv.experiment: the policy experiment on vLLM (see tempokv/experiment/__init__).

Builds the model if absent, plans the runs, starts ONE vLLM process (tempokv.experiment.engine)
that precomputes missing stores and runs every policy, then writes the rows (``--json``, and
``OUT/eval-vllm-<scenario>.json``), prints a table and the invariants, and draws the figures
with ``--plots`` (scripts/plot). Exit 0 when every run's invariants hold (all complete, outputs
identical, nothing loaded failed, no KV carried over, daemon counters back to 0), 1 otherwise,
2 on a usage or set-up error.
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from ..e2e import model as model_mod
from ..e2e.daemon import default_tempokvd
from . import plan as plan_mod
from . import rows as rows_mod
from . import verdicts as verdicts_mod

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
CACHE = os.path.expanduser(os.environ.get("TEMPOKV_CACHE", "~/.cache/tempokv"))


def _table(rows):
    cols = [("policy", "{}"), ("ratio", "{:g}"), ("rate", "{:g}"), ("seed", "{}"),
            ("repeat", "{}"),
            ("p95_ttft_s", "{:.2f}"), ("p50_ttft_s", "{:.2f}"), ("throughput_tok_s", "{:.1f}"),
            ("c_gib_s_per_req", "{:.3f}"), ("late_claims", "{}"), ("lateness_p95_s", "{:.3f}"),
            ("time_to_restore_s", "{:.3f}"), ("restored_tokens", "{}"),
            ("outputs_identical", "{}")]
    lines = ["  ".join(f"{c:>14}" for c, _ in cols)]
    for r in rows:
        cells = []
        for c, f in cols:
            v = r.get(c)
            cells.append(f"{'-' if v is None else f.format(v):>14}")
        lines.append("  ".join(cells))
    return "\n".join(lines)


def lmcache_python():
    """The lmcache environment's interpreter ($TEMPOKV_LMCACHE_VENV, default
    /opt/tempokv/venv-lmcache, made by scripts/install-lmcache), or None with the reason on
    stderr when it cannot import LMCache."""
    venv = os.environ.get("TEMPOKV_LMCACHE_VENV", "/opt/tempokv/venv-lmcache")
    python = os.path.join(venv, "bin", "python")
    if os.access(python, os.X_OK) and subprocess.call(
            [python, "-c", "import lmcache"], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL) == 0:
        return python
    print(f"tempokv experiment: the lmcache policy needs LMCache's environment, and {venv} "
          "cannot import lmcache (create it with scripts/install-lmcache, or point "
          "TEMPOKV_LMCACHE_VENV at one)", file=sys.stderr)
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(prog="tempokv eval --mode vllm",
                                 description="commit policies measured on a real vLLM")
    ap.add_argument("--scenario", required=True, choices=["fig4-policies", "fig6-rate"])
    ap.add_argument("--policies", help="comma-separated (default fig4: the six; fig6: "
                                       "recompute,demand); 'recompute' = vLLM with no connector; "
                                       "'tempokv-static' = TempoKV without error feedback, "
                                       "'tempokv-no-wait', '-no-chain', '-no-order-stats', "
                                       "'-no-state-ttr' = without that mechanism; "
                                       "'lmcache' = vLLM with LMCache 0.5.6 instead "
                                       "(scripts/install-lmcache), 'lmcache-cold' = the same "
                                       "with an empty store")
    ap.add_argument("--seeds", type=int, default=1, help="seeds 1..N")
    ap.add_argument("--seed", type=int, help="one seed (instead of 1..N)")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--out", default="out/vllm", help="directory of the JSON and figures")
    ap.add_argument("--plots", action="store_true")
    ap.add_argument("--quick", action="store_true", help="the tiny version (tests, demo)")
    ap.add_argument("--ratios", help="fig4 prefix ratios, e.g. 1.0,0.5")
    ap.add_argument("--requests", type=int, help="requests per run (default: the protocol's)")
    ap.add_argument("--repeats", type=int, default=1,
                    help="runs of each policy per seed and ratio, in turn (the order reversed "
                         "every other time); verdicts and medians use each seed's mean")
    ap.add_argument("--read-bytes-per-s", type=float,
                    help="tempokvd's SSD read cap (default: from the engine's measured "
                         "decode step; 0 = no cap)")
    ap.add_argument("--interval-s", type=float, help="fig4 arrival interval (default: by "
                    "ratio, from the engine's measured speed and the protocol's load)")
    ap.add_argument("--model-dir", default=os.environ.get(
        "TEMPOKV_MODEL_DIR", os.path.join(CACHE, "tiny-llama")))
    ap.add_argument("--tempokvd", default=os.environ.get("TEMPOKVD") or default_tempokvd())
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    a = ap.parse_args(argv)
    if not a.tempokvd or not os.access(a.tempokvd, os.X_OK):
        print("tempokv experiment: no tempokvd binary (build it, or set TEMPOKVD)",
              file=sys.stderr)
        return 2
    import importlib.util
    if importlib.util.find_spec("vllm") is None:
        print(f"tempokv experiment: vLLM is not installed for {sys.executable}; install the "
              "venv (scripts/install-deps)", file=sys.stderr)
        return 2
    p = dict(plan_mod.QUICK if a.quick else plan_mod.PROTOCOL)
    if a.ratios:
        p["ratios"] = [float(x) for x in a.ratios.split(",")]
    if a.requests is not None:
        if a.requests < 1:
            ap.error(f"--requests must be at least 1, got {a.requests}")
        p["requests"] = a.requests
    if a.read_bytes_per_s is not None:
        p["read_bytes_per_s"] = a.read_bytes_per_s
        p["read_cap_scales_with_ratio"] = False  # the cap given, at every ratio
    if a.interval_s:
        p["interval_s"] = a.interval_s
    if a.repeats < 1:
        ap.error(f"--repeats must be at least 1, got {a.repeats}")
    policies = [x.strip() for x in a.policies.split(",")] if a.policies else None
    for pol in policies or []:
        known = plan_mod.SIX + plan_mod.VARIANTS + [plan_mod.RECOMPUTE, *plan_mod.LMCACHE_POLICIES]
        if pol not in known and not pol.startswith("queue-"):
            ap.error(f"unknown policy {pol!r}")
    # The engine's process: LMCache's runs need its environment (which sees this one's vLLM
    # and torch) and stable hashes (its keys chain vLLM's block hash, seeded per process).
    engine_python, engine_env = sys.executable, dict(os.environ)
    if set(plan_mod.LMCACHE_POLICIES) & set(policies or []):
        engine_python = lmcache_python()
        if engine_python is None:
            return 2
        engine_env["PYTHONHASHSEED"] = "0"
    seeds = [a.seed] if a.seed else list(range(1, a.seeds + 1))
    model_mod.build(a.model_dir)
    cache = os.path.join(CACHE, "experiment-stores")
    os.makedirs(cache, exist_ok=True)
    prompt_sets, stores, runs = plan_mod.build(a.scenario, policies, seeds, p, cache,
                                                 a.repeats)
    work = tempfile.mkdtemp(prefix="tempokv-exp-", dir="/var/tmp")
    spec = {"model_dir": a.model_dir, "tempokvd": a.tempokvd, "work": work,
            "endpoint": "ipc://" + os.path.join(work, "tempokvd.sock"),
            "chunk_tokens": p["chunk_tokens"], "max_model_len": p["max_model_len"],
            "max_num_seqs": p["max_num_seqs"],
            "max_num_batched_tokens": p["max_num_batched_tokens"],
            "max_tokens": p["max_tokens"], "prompt_sets": prompt_sets, "stores": stores,
            "runs": runs, "keep": a.keep, "protocol": p,
            # A calibrated cap is added by the engine once it has measured its speed.
            "daemon_flags": (plan_mod.read_cap_flags(p["read_bytes_per_s"])
                             if p["read_bytes_per_s"] is not None else [])}
    spec_path, out_path = os.path.join(work, "spec.json"), os.path.join(work, "out.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    t0 = time.monotonic()
    log_path = os.path.join(work, "engine.log")
    print(f"tempokv experiment: {a.scenario}, {len(runs)} runs, {len(stores)} stores to "
          f"precompute; one vLLM process (log: {log_path})", file=sys.stderr, flush=True)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([engine_python, "-m", "tempokv.experiment.engine", "--spec",
                                 spec_path, "--out", out_path], stdout=subprocess.PIPE,
                                stderr=log, env=engine_env)
        for line in proc.stdout:
            log.write(line)
            log.flush()
            if line.startswith(b"tempokv experiment:"):
                sys.stderr.write(line.decode())
        rc = proc.wait()
    # The engine process's peak resident memory (the machine is shared: fig6 was OOM-killed
    # when it used two engines).
    max_rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if rc != 0:
        with open(log_path, "rb") as f:
            tail = f.read()[-6000:].decode("utf-8", "replace")
        print(f"tempokv experiment: the vLLM process failed ({rc}); end of {log_path}:\n{tail}",
              file=sys.stderr)
        if not os.path.exists(out_path):
            return 1
        print("tempokv experiment: rows of the runs it finished follow", file=sys.stderr)
    with open(out_path) as f:
        out = json.load(f)
    by_name = {e["name"]: e for e in out["runs"]}
    runs = [r for r in runs if r["name"] in by_name]
    kv = model_mod.kv_bytes_per_token()
    cal = out.get("calibration")
    if plan_mod.calibrated(p) and not cal and out["runs"]:
        print("tempokv experiment: the protocol is calibrated but the engine recorded no "
              "calibration", file=sys.stderr)
        rc = rc or 1
    if cal:
        p = dict(p, read_bytes_per_s=cal["read_bytes_per_s"])
    rows = [rows_mod.row(r, by_name[r["name"]], p, kv, "tiny-llama") for r in runs]
    rows_mod.mark_identical(rows)
    ok = rc == 0 and all(rows_mod.invariants_hold(r) for r in rows)
    result = {"scenario": a.scenario, "mode": "vllm", "vllm_version": out.get("vllm_version"),
              "protocol": p, "calibration": cal, "kv_bytes_per_token": kv,
              "engine_init_s": out.get("init_s"),
              "precomputed": out.get("precomputed"), "wall_s": time.monotonic() - t0,
              "engine_max_rss_mib": round(max_rss_mib),
              "invariants_hold": ok, "rows": rows, "medians": rows_mod.medians(rows),
              "verdicts": verdicts_mod.judge(rows)}
    os.makedirs(a.out, exist_ok=True)
    default_json = os.path.join(a.out, f"eval-vllm-{a.scenario}.json")
    for path in {a.json or default_json, default_json}:
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
    print(_table(rows))
    for line in verdicts_mod.lines(result["verdicts"], rows):
        print(line)
    print(f"tempokv experiment: {len(rows)} runs in {result['wall_s']:.0f} s "
          f"(vLLM start-up {sum(out.get('init_s', {}).values()):.0f} s); invariants "
          f"{'hold' if ok else 'FAIL'} (all complete, outputs identical, no load error, no KV "
          f"carried over, daemon drained); JSON: {a.json or default_json}")
    if a.plots:
        subprocess.call([os.path.join(REPO, "scripts", "plot"), a.out,
                         os.path.basename(default_json)])
    if ok and not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"tempokv experiment: work directory kept: {work}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
