"""scripts/vllm-e2e's verdict (tempokv.e2e.run.failures) on results it never produced here: a
pass 2 as slow as pass 1 fails it, as does one that restored only part of the stored prefix, a
negative control that went unnoticed, restored KV that differs from vLLM's own, or a reference
that did not hit its own prefix cache."""

from tempokv.e2e.run import failures

GOOD = {
    "tp": 1, "kv_identical": True, "kv_identical_to_saved": True, "kv_identical_to_vllm": True,
    "negative_control_detected": True, "reference_cached_tokens": 33536,
    "tokens_identical": True, "killed_all_finished": True,
    "killed_tokens_identical": True, "load_errors": 0, "killed_load_errors": 7,
    "killed_restored_tokens": 4352, "agent_errors_pass1": 0, "agent_errors_pass2": 0,
    "restored_tokens": 33536, "restorable_tokens": 33536,
    "ttft_ratio_pass2_pass1": round(3.79 / 72.2, 3),  # a measured run
    "daemon_live_claims_after": 0, "daemon_protected_bytes_after": 0,
    "daemon_reserved_bytes_after": 0,
}


def test_a_run_that_restores_everything_fast_passes():
    assert failures(GOOD) == []


def test_a_pass_2_as_slow_as_pass_1_fails_on_the_ttft_ratio():
    # A measured regression: pass 2's TTFT p50 22 s against pass 1's 21.5 s, all restored.
    bad = dict(GOOD, ttft_ratio_pass2_pass1=round(22.0 / 21.5, 3))
    assert failures(bad) == ["ttft_ratio_pass2_pass1 <= 0.5"]


def test_a_pass_2_that_restored_part_of_the_stored_prefix_fails():
    bad = dict(GOOD, restored_tokens=4096)
    assert failures(bad) == ["reference_cached_tokens == restored_tokens",
                             "restored_tokens == restorable_tokens"]


def test_a_missing_ratio_fails():
    assert "ttft_ratio_pass2_pass1 <= 0.5" in failures(dict(GOOD, ttft_ratio_pass2_pass1=None))


def test_a_negative_control_that_went_unnoticed_fails():
    # The altered block passed every comparison: the oracles cannot fail.
    assert failures(dict(GOOD, negative_control_detected=False)) == ["negative_control_detected"]


def test_restored_kv_that_differs_from_vllms_own_fails():
    bad = dict(GOOD, kv_identical=False, kv_identical_to_vllm=False)
    assert failures(bad) == ["kv_identical"]


def test_a_reference_that_did_not_hit_its_own_prefix_cache_fails():
    # It recomputed: its tokens compare restore against recompute, not against vLLM's cache.
    bad = dict(GOOD, reference_cached_tokens=0)
    assert failures(bad) == ["reference_cached_tokens == restored_tokens"]


def test_loaded_blocks_are_held_against_vllms_blocks_of_the_request_that_saved_them(tmp_path):
    import json
    from tempokv.e2e.reference import compare
    saved, loaded = tmp_path / "saved", tmp_path / "loaded"
    # Chunk "k" (2 blocks) was saved by r0 (its chunk 1); r1 loaded it as its chunk 0.
    saved.write_text("".join(json.dumps(r) + "\n" for r in [
        {"op": "save", "key": "k", "block": 0, "xxh3": 5, "req": "r0-1a2b3c4d", "chunk": 1,
         "rank": 0},
        {"op": "save", "key": "k", "block": 1, "xxh3": 6, "req": "r0-1a2b3c4d", "chunk": 1,
         "rank": 0}]))
    loaded.write_text("".join(json.dumps(r) + "\n" for r in [
        {"op": "load", "key": "k", "block": 0, "xxh3": 5, "req": "r1-9f", "chunk": 0, "rank": 0},
        {"op": "load", "key": "k", "block": 1, "xxh3": 6, "req": "r1-9f", "chunk": 0, "rank": 0}]))
    vllm_blocks = {("r0", 0): [1, 2, 5, 6], ("r1", 0): [5, 7]}
    assert compare(saved, loaded, vllm_blocks, 2) == (2, 0)
    assert compare(saved, loaded, {("r0", 0): [1, 2, 5, 9]}, 2) == (2, 1)
    assert compare(saved, loaded, {("r0", 1): [1, 2, 5, 6]}, 2) == (2, 2), "another rank's"
