"""The experiment's lmcache policy without LMCache itself: its runs and stores in the plan, its
rows (time to restore, invariants), and the read cap its fs:// reads are paced at."""

import time

import pytest

from tempokv.experiment import lmcache_adapter, plan, rows


def test_lmcache_runs_read_a_store_of_their_own_of_the_same_prefixes(tmp_path):
    p = dict(plan.QUICK, requests=3)
    prompt_sets, stores, runs = plan.build("fig6-rate", ["tempokv", plan.LMCACHE], [1], p,
                                           str(tmp_path))
    tk = [s for s in stores if s.get("kind") is None]
    lm = [s for s in stores if s.get("kind") == plan.LMCACHE]
    assert len(tk) == 1 and len(lm) == 1
    assert lm[0]["prefixes"] == tk[0]["prefixes"] and lm[0]["chunks"] == tk[0]["chunks"] > 0
    assert lm[0]["data_dir"] != tk[0]["data_dir"]
    by = {r["policy"]: r for r in runs}
    assert by[plan.LMCACHE]["store_dir"] == lm[0]["data_dir"]
    assert by["tempokv"]["store_dir"] == tk[0]["data_dir"]
    # Same prompts and arrivals for both.
    assert by[plan.LMCACHE]["prompts"] == by["tempokv"]["prompts"]
    assert by[plan.LMCACHE]["interval_s"] == by["tempokv"]["interval_s"]
    # Only LMCache asked for: no TempoKV store to precompute; its cold reference reads none.
    _, stores, runs = plan.build("fig6-rate", [plan.LMCACHE, plan.LMCACHE_COLD], [1], p,
                                 str(tmp_path))
    assert [s.get("kind") for s in stores] == [plan.LMCACHE]
    assert {r["policy"]: r["store_dir"] for r in runs}[plan.LMCACHE_COLD] is None


def _entry(connector, cached=(512, 0)):
    reqs = [{"arrival_s": float(i), "first_token_s": i + 0.5, "finished_s": i + 1.0,
             "tokens": [1, 2], "prompt_tokens": 700, "num_cached_tokens": c}
            for i, c in enumerate(cached)]
    return {"requests": reqs, "run_s": 2.0, "rate": 1.0, "interval_s": 1.0,
            "connector": connector, "kv_blocks_total": 10, "kv_blocks_free_after": 10}


def _row(policy, connector, **kw):
    run = {"scenario": "fig6-rate", "label": policy, "seed": 1, "ratio": 1.0}
    r = rows.row(run, _entry(connector, **kw), dict(plan.QUICK, read_bytes_per_s=1e8),
                 24576, "tiny")
    rows.mark_identical([r, dict(r, _tokens=r["_tokens"])])
    return r


def test_time_to_restore_is_per_load_for_both_systems():
    lm = _row(plan.LMCACHE, {"loaded_tokens": 512, "load_errors": 0, "restores": 1,
                             "restore_s": 0.3, "writes_done": True})
    assert lm["time_to_restore_s"] == pytest.approx(0.3) and lm["restores"] == 1
    assert rows.invariants_hold(lm)
    tk = _row("tempokv", {"loaded_tokens": 512, "load_errors": 0, "transfers": 2,
                          "load_wait_s": 0.5, "transfer_s": 0.1, "transfer_byte_s": 0.0})
    assert tk["time_to_restore_s"] == pytest.approx(0.3)


@pytest.mark.parametrize("bad", [{"load_errors": 1}, {"writes_done": False},
                                 {"loaded_tokens": 256}])
def test_an_lmcache_run_that_failed_a_load_left_writes_or_restored_other_tokens_fails(bad):
    c = dict({"loaded_tokens": 512, "load_errors": 0, "restores": 1, "restore_s": 0.3,
              "writes_done": True}, **bad)
    assert not rows.invariants_hold(_row(plan.LMCACHE, c))


def test_the_cold_reference_restores_nothing():
    c = {"loaded_tokens": 0, "load_errors": 0, "restores": 0, "restore_s": 0.0,
         "writes_done": True}
    assert rows.invariants_hold(_row(plan.LMCACHE_COLD, c, cached=(0, 0)))
    c = dict(c, loaded_tokens=512, restores=1)
    assert not rows.invariants_hold(_row(plan.LMCACHE_COLD, c))


def test_fs_reads_are_paced_one_after_another_at_the_cap():
    lmcache_adapter.set_read_cap(100e6)
    try:
        t = time.monotonic()
        d1 = lmcache_adapter._read_delay(10e6)  # 0.1 s
        d2 = lmcache_adapter._read_delay(20e6)  # after the first: 0.3 s from now
        elapsed = time.monotonic() - t
        assert d1 == pytest.approx(0.1, abs=elapsed + 1e-3)
        assert d2 == pytest.approx(0.3, abs=elapsed + 1e-3)
        lmcache_adapter.set_read_cap(0)
        assert lmcache_adapter._read_delay(10e9) == 0.0
    finally:
        lmcache_adapter.set_read_cap(0)


def test_the_connector_refuses_to_start_without_stable_hashes(monkeypatch):
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    with pytest.raises(RuntimeError, match="PYTHONHASHSEED=0"):
        lmcache_adapter.install()


def test_the_transfer_config_names_this_connector_and_an_fs_store(tmp_path):
    c = lmcache_adapter.transfer_config(str(tmp_path / "s"), 256, read_bytes_per_s=5e7)
    assert c["kv_connector"] == "LMCacheCPUConnector"
    assert c["kv_connector_module_path"] == "tempokv.experiment.lmcache_adapter"
    extra = c["kv_connector_extra_config"]
    assert extra["lmcache.remote_url"] == f"fs://localhost:0{tmp_path / 's'}"
    assert extra["lmcache.local_cpu"] is False and extra["lmcache.chunk_size"] == 256
    assert extra["tempokv.read_bytes_per_s"] == 5e7
