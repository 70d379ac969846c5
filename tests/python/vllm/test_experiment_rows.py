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
