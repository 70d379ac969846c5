"""The experiment's per-claim rows: tempokvd's /claims joined to the run's requests."""

import pytest

from tempokv.experiment import rows


def _claim(request, reported, committed, projected):
    c = {"request": request, "runtime": "vllm", "footprint_bytes": 6 << 20, "ordinary": False,
         "refused": False, "ordinary_only": False, "cancelled": False, "failure": "",
         "ttr_at_commit_s": 0.15}
    for k in rows.CLAIM_TIMES:
        c[k + "_s"] = None
    c.update(reported_s=reported, committed_s=committed, projected_use_at_commit_s=projected)
    return c


def _request(arrival, first_token, cached):
    return {"arrival_s": arrival, "first_token_s": first_token, "num_cached_tokens": cached}


def test_claims_are_timed_from_the_first_arrival_and_joined_to_the_requests_with_a_hit():
    t0 = 1000.0
    entry = {"t0_s": t0,
             "requests": [_request(0.0, 0.9, 512), _request(0.5, 1.2, 0), _request(1.0, 2.0, 256)],
             # /claims lists claims in the order they ended, not the order they were reported.
             "claims": [_claim(9, t0 + 1.01, t0 + 1.5, t0 + 1.8),
                        _claim(7, t0 + 0.01, t0 + 0.2, t0 + 0.6)]}
    out = rows.claim_rows(entry)
    assert [c["request"] for c in out] == [7, 9]
    assert abs(out[0]["committed_s"] - 0.2) < 1e-9
    assert abs(out[1]["projected_use_at_commit_s"] - 1.8) < 1e-9
    assert out[0]["ready_s"] is None
    assert (out[0]["arrival_s"], out[0]["first_token_s"]) == (0.0, 0.9)
    assert (out[1]["arrival_s"], out[1]["first_token_s"]) == (1.0, 2.0)  # request 1 had no hit


def test_claims_that_cannot_be_joined_keep_their_times_without_requests():
    entry = {"t0_s": 10.0, "requests": [_request(0.0, 0.5, 512)],
             "claims": [_claim(1, 10.0, 10.1, 10.4), _claim(2, 10.2, 10.3, 10.9)]}
    out = rows.claim_rows(entry)
    assert len(out) == 2 and "arrival_s" not in out[0]
    assert rows.claim_rows({"requests": [], "claims": []}) == []


def test_a_claims_hold_splits_into_staging_early_or_waiting_and_copy():
    from tempokv.experiment import claims
    early = {"committed_s": 1.0, "ready_s": 1.2, "retrieval_requested_s": 1.7, "released_s": 1.8}
    assert claims.parts(early) == pytest.approx({"staging": 0.2, "early": 0.5, "waiting": 0.0,
                                                 "copy": 0.1, "hold": 0.8})
    late = {"committed_s": 1.0, "ready_s": 1.5, "retrieval_requested_s": 1.2, "released_s": 1.6}
    p = claims.parts(late)
    assert p["early"] == 0.0 and abs(p["waiting"] - 0.3) < 1e-9 and abs(p["copy"] - 0.1) < 1e-9
    assert abs(p["staging"] + p["early"] + p["copy"] - p["hold"]) < 1e-9
    assert claims.parts({"committed_s": 1.0, "ready_s": None, "retrieval_requested_s": 1.2,
                         "released_s": 1.6}) is None


def test_process_cpu_counts_a_childs_busy_seconds_and_not_its_sleep():
    import subprocess
    import time

    from tempokv.e2e.daemon import process_cpu_s

    child = subprocess.Popen(["python3", "-c",
                              "import time\nt=time.process_time()\n"
                              "while time.process_time()-t<0.3: pass\n"
                              "print('busy', flush=True)\ntime.sleep(30)"],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "busy"  # 0.3 s of CPU spent, now asleep
        used = process_cpu_s(child.pid)
        assert 0.3 <= used <= 0.8  # its own 0.3 s and the interpreter's start
        time.sleep(0.5)
        assert process_cpu_s(child.pid) - used < 0.05  # asleep: no more CPU
    finally:
        child.kill()
        child.wait()


def _seed_rows(seed, **p95_by_policy):
    return [{"scenario": "fig4-policies", "ratio": 1.0, "rate": 10.0, "seed": seed,
             "policy": pol, "p95_ttft_s": p95, "c_gib_s_per_req": 1.0,
             "lateness_p95_s": 0.1} for pol, p95 in p95_by_policy.items()]


def _held(rows_):
    """The fields of a run whose invariants hold (all complete, drained, nothing carried over)."""
    for r in rows_:
        r.update(model="m", completed=12, requests=12, outputs_identical=True,
                 kv_blocks_free_after=9, kv_blocks_total=9, cached_equals_loaded=True,
                 load_errors=0, agent_errors=0, daemon_live_claims_after=0,
                 daemon_protected_bytes_after=0, daemon_reserved_bytes_after=0)
    return rows_


def test_targets_are_judged_seed_by_seed_not_on_medians_of_each_policy():
    from tempokv.experiment import verdicts
    # TempoKV is 5 % faster than Demand in three seeds of five and far slower in two: the
    # median of the per-seed ratios is 0.95, while the ratio of the two policies' medians over
    # seeds (2.85 / 1.5) would pair TempoKV's seed 3 with Demand's seed 4.
    rows = (_seed_rows(1, tempokv=0.95, demand=1.0) + _seed_rows(2, tempokv=1.9, demand=2.0)
            + _seed_rows(3, tempokv=2.85, demand=3.0) + _seed_rows(4, tempokv=4.0, demand=1.5)
            + _seed_rows(5, tempokv=5.0, demand=1.2))
    v = [x for x in verdicts.judge(rows) if x["target"] == "p95 tempokv/demand"]
    assert len(v) == 1 and v[0]["met"] and v[0]["seeds_met"] == 3
    assert v[0]["median"] == pytest.approx(0.95)
    assert v[0]["values"][4] == pytest.approx(4.0 / 1.5)
    # Targets whose policies were not run are left out, not failed.
    assert {x["target"] for x in verdicts.judge(rows)} == {"p95 tempokv/demand"}


def test_a_targets_interval_says_when_the_seeds_do_not_decide_it():
    from tempokv.experiment import verdicts
    ratios = [0.8, 0.9, 0.95, 1.05, 1.3]
    rows = [r for s, x in enumerate(ratios, 1) for r in _seed_rows(s, tempokv=x, demand=1.0)]
    v = verdicts.judge(rows)[0]
    assert v["met"] and v["seeds_met"] == 3 and v["median"] == pytest.approx(0.95)
    assert (v["lo"], v["hi"]) == (0.8, 1.3)  # five seeds: the range (93.75 %)
    assert v["coverage"] == pytest.approx(1 - 2 / 32)
    line = verdicts.lines([v], [])[0]
    assert "0.950 [0.800, 1.300]" in line and "3/5 seeds" in line and "met" in line
    # Ten seeds: x_(2)..x_(9) covers the median with 97.9 %; x_(3)..x_(8) only 89 %.
    lo, hi, cov = verdicts.median_interval(list(range(10)))
    assert (lo, hi) == (1, 8) and cov == pytest.approx(1 - 2 * 11 / 1024)
    assert verdicts.median_interval([1.0, 2.0, 3.0])[2] == pytest.approx(0.75)


def test_the_best_of_two_noisy_p95s_is_shown_with_immediates_own_score_beside_it():
    from tempokv.experiment import verdicts
    # Immediate and Queue-4 alike but for noise: each is the better in half the seeds, so
    # Immediate's own ratio to the better of the two is above 1 in half of them.
    rows = []
    for s, (im, q4) in enumerate([(1.0, 1.2), (1.2, 1.0), (1.0, 1.3), (1.3, 1.0)], 1):
        rows += _seed_rows(s, tempokv=1.1, immediate=im, **{"queue-4": q4})
    by = {v["target"]: v for v in verdicts.judge(rows)}
    ref = by["p95 immediate/best(immediate, queue-4), for reference"]
    assert ref["limit"] is None and "met" not in ref
    assert ref["median"] == pytest.approx((1.0 + 1.2) / 2)
    assert by["p95 tempokv/best(immediate, queue-4)"]["met"]  # 1.1 in every seed
    line = verdicts.lines(list(by.values()), [])[0]
    assert "for reference 1.100 [1.000, 1.300];" in line and "invariants hold" in line


def test_a_line_says_when_a_run_of_its_ratio_broke_an_invariant():
    from tempokv.experiment import verdicts
    rows = _seed_rows(1, tempokv=0.9, demand=1.0)
    for r in rows:
        r.update(completed=12, requests=12, outputs_identical=True, kv_blocks_free_after=9,
                 kv_blocks_total=9, cached_equals_loaded=True, load_errors=0, agent_errors=0,
                 daemon_live_claims_after=0, daemon_protected_bytes_after=0,
                 daemon_reserved_bytes_after=0)
    v = verdicts.judge(rows)
    assert verdicts.lines(v, rows)[0].endswith("invariants hold")
    rows[1]["daemon_live_claims_after"] = 1  # Demand's daemon left a claim behind
    assert verdicts.lines(v, rows)[0].endswith("invariants FAIL")


def test_a_seeds_repeated_runs_are_judged_on_each_policys_mean():
    from tempokv.experiment import verdicts
    # Seed 1 ran twice: TempoKV 1.0 then 1.2 (mean 1.1), Demand 1.0 then 1.0. Judged on the
    # means, 1.1; a verdict on either run alone would say 1.0 or 1.2.
    runs = _seed_rows(1, tempokv=1.0, demand=1.0) + _seed_rows(1, tempokv=1.2, demand=1.0)
    for i, r in enumerate(runs):
        r["repeat"] = i // 2
    v = [x for x in verdicts.judge(runs) if x["target"] == "p95 tempokv/demand"]
    assert len(v) == 1 and v[0]["values"] == {1: pytest.approx(1.1)}
    assert v[0]["repeats"] == 2 and not v[0]["met"]
    assert "(each policy's mean of 2 runs)" in verdicts.lines(v, [])[0]
    # The medians over seeds fold the repeats first: one value per seed, their count beside.
    _held(runs)
    med = {m["policy"]: m for m in rows.medians(runs)}
    assert med["tempokv"]["seeds"] == [1] and med["tempokv"]["repeats"] == [2]
    assert med["tempokv"]["p95_ttft_s"] == pytest.approx(1.1)
    assert med["tempokv"]["invariants_hold"]
    runs[2]["daemon_live_claims_after"] = 1  # TempoKV's second run left a claim behind
    assert not {m["policy"]: m for m in rows.medians(runs)}["tempokv"]["invariants_hold"]


def test_a_seeds_runs_may_be_folded_by_their_median_so_one_slowed_run_does_not_move_it():
    from tempokv.experiment import verdicts
    # Seed 1 ran three times; TempoKV's third run was slowed by the machine (3.0 against 1.0):
    # the mean says 1.667 x Demand's, the median 1.0.
    runs = []
    for k, t in enumerate((1.0, 1.0, 3.0)):
        for r in _seed_rows(1, tempokv=t, demand=1.0):
            runs.append(dict(r, repeat=k))
    by_fold = {}
    for fold in ("mean", "median"):
        v = [x for x in verdicts.judge(runs, fold) if x["target"] == "p95 tempokv/demand"]
        assert len(v) == 1
        by_fold[fold] = v[0]
    assert by_fold["mean"]["values"] == {1: pytest.approx(5 / 3)} and not by_fold["mean"]["met"]
    assert by_fold["median"]["values"] == {1: pytest.approx(1.0)} and by_fold["median"]["met"]
    assert "(each policy's median of 3 runs)" in verdicts.lines([by_fold["median"]], [])[0]
    with pytest.raises(KeyError):
        verdicts.judge(runs, "mode")


def test_several_result_files_are_judged_as_repeats_of_one_experiment(tmp_path, capsys):
    import json

    from tempokv.experiment import verdicts
    # Two runs of fig4 whose engines calibrated different arrival rates, and a fig6 sweep: fig4's
    # seed 1 pools into means of two runs (1.0 and 1.2 -> 1.1); fig6's rates stay apart.
    first = _held(_seed_rows(1, tempokv=1.0, demand=1.0))
    second = [dict(r, rate=12.5) for r in _held(_seed_rows(1, tempokv=1.2, demand=1.0))]
    fig6 = [dict(r, scenario="fig6-rate", rate=rate) for rate in (1.0, 2.0)
            for r in _held(_seed_rows(1, tempokv=1.0, demand=1.0))]
    paths = []
    for i, rows_ in enumerate((first + fig6, second)):
        p = tmp_path / f"r{i}.json"
        p.write_text(json.dumps({"mode": "vllm", "rows": rows_}))
        paths.append(str(p))
    pooled = verdicts.pooled_rows([json.loads(open(p).read()) for p in paths])
    assert {r["rate"] for r in pooled if r["scenario"] == "fig4-policies"} == {10.0}
    assert {r["rate"] for r in pooled if r["scenario"] == "fig6-rate"} == {1.0, 2.0}
    assert verdicts.main(paths + ["--fold", "median"]) == 0
    assert "each policy's median of 2 runs" in capsys.readouterr().out
    assert verdicts.main(paths) == 0
    out = capsys.readouterr().out.splitlines()
    fig4 = [line for line in out if line.startswith("fig4-policies")]
    assert len(fig4) == 1 and "each policy's mean of 2 runs" in fig4[0]
    assert "p95 tempokv/demand 1.100" in fig4[0] and "MISSED" in fig4[0]
    assert len([line for line in out if line.startswith("fig6-rate")]) == 2
    # A file whose engine measured its speed on a busy machine is judged, and said to be.
    busy = tmp_path / "busy.json"
    busy.write_text(json.dumps({"mode": "vllm", "rows": first,
                                "calibration": {"busy": True, "foreign_cores": 1.25}}))
    assert verdicts.main([str(busy)]) == 0
    assert "calibrated on a busy machine (1.25 cores" in capsys.readouterr().err
    # Not a result of the vLLM experiment: a clear error, exit 2.
    other = tmp_path / "sim.json"
    other.write_text(json.dumps({"mode": "sim", "rows": []}))
    assert verdicts.main([str(other)]) == 2
    assert "not a result of tempokv eval --mode vllm" in capsys.readouterr().err
    assert verdicts.main([str(tmp_path / "missing.json")]) == 2


def test_the_floor_with_staging_reads_at_the_cap_of_the_runs_ratio():
    # One request restoring 1000 tokens of 1 MiB each: its bytes held while read at the cap.
    req = {"arrival_s": 0.0, "first_token_s": 0.1, "finished_s": 0.5, "tokens": [1, 2],
           "num_cached_tokens": 1000, "prompt_tokens": 2000}
    entry = {"requests": [req], "rate": 1.0, "interval_s": 1.0, "run_s": 1.0}
    p = {"read_bytes_per_s": float(1 << 30), "read_cap_scales_with_ratio": True}

    def floor(ratio, protocol):
        run = {"scenario": "fig4-policies", "label": "demand", "seed": 1, "ratio": ratio}
        return rows.row(run, entry, protocol, 1 << 20, "tiny")["c_floor_staging_gib_s_per_req"]

    gib = 1000 / 1024  # the restored bytes in GiB
    assert floor(1.0, p) == pytest.approx(gib * gib)  # read at 1 GiB/s
    assert floor(0.5, p) == pytest.approx(gib * gib * 2)  # the 50 % runs' cap is half
    assert floor(0.5, dict(p, read_cap_scales_with_ratio=False)) == pytest.approx(gib * gib)
