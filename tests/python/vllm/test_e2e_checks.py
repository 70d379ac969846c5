"""scripts/vllm-e2e's verdict (tempokv.e2e.run.failures) on results it never produced here: a
pass 2 as slow as pass 1 fails it, as does one that restored only part of the stored prefix."""

from tempokv.e2e.run import failures

GOOD = {
    "kv_identical": True, "tokens_identical": True, "killed_all_finished": True,
    "killed_tokens_identical": True, "load_errors": 0, "killed_load_errors": 7,
    "killed_restored_tokens": 4352, "agent_errors_pass1": 0, "agent_errors_pass2": 0,
    "restored_tokens": 33536, "restorable_tokens": 33536,
    "ttft_ratio_pass2_pass1": round(3.79 / 72.2, 3),  # this session's run
    "daemon_live_claims_after": 0, "daemon_protected_bytes_after": 0,
    "daemon_reserved_bytes_after": 0,
}


def test_a_run_that_restores_everything_fast_passes():
    assert failures(GOOD) == []


def test_a_pass_2_as_slow_as_pass_1_fails_on_the_ttft_ratio():
    # Session 5's regression: pass 2's TTFT p50 22 s against pass 1's 21.5 s, all restored.
    bad = dict(GOOD, ttft_ratio_pass2_pass1=round(22.0 / 21.5, 3))
    assert failures(bad) == ["ttft_ratio_pass2_pass1 <= 0.5"]


def test_a_pass_2_that_restored_part_of_the_stored_prefix_fails():
    bad = dict(GOOD, restored_tokens=4096)
    assert failures(bad) == ["restored_tokens == restorable_tokens"]


def test_a_missing_ratio_fails():
    assert "ttft_ratio_pass2_pass1 <= 0.5" in failures(dict(GOOD, ttft_ratio_pass2_pass1=None))
