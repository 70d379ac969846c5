"""The experiment's plan: every policy once per (seed, ratio, rate), in an order that changes
with the seed (TempoKV is not always the last to run while the machine's load drifts)."""

import pytest

from tempokv.experiment import plan


def test_each_seed_runs_every_policy_once_in_an_order_of_its_own(tmp_path):
    p = dict(plan.QUICK, ratios=[1.0, 0.5])
    _, _, runs = plan.build("fig4-policies", plan.SIX, [1, 2, 3, 4], p, str(tmp_path))
    orders = {}
    for r in runs:
        orders.setdefault((r["seed"], r["ratio"]), []).append(r["label"])
    assert len(orders) == 8
    assert all(sorted(o) == sorted(plan.SIX) for o in orders.values())
    assert len({tuple(o) for o in orders.values()}) > 1
    assert {o[-1] for o in orders.values()} != {"tempokv"}
    _, _, again = plan.build("fig4-policies", plan.SIX, [1, 2, 3, 4], p, str(tmp_path))
    assert [r["name"] for r in again] == [r["name"] for r in runs]


def test_fig4_arrivals_are_faster_at_100_percent_unless_one_interval_is_given(tmp_path):
    def intervals(p):
        _, _, runs = plan.build("fig4-policies", ["tempokv"], [1], p, str(tmp_path))
        return {r["ratio"]: r["interval_s"] for r in runs}
    fixed = dict(plan.PROTOCOL, interval_s={1.0: 0.15, 0.5: 0.5})
    assert intervals(fixed) == {1.0: 0.15, 0.5: 0.5}
    assert intervals(dict(plan.PROTOCOL, interval_s=0.3)) == {1.0: 0.3, 0.5: 0.3}
    assert intervals(dict(fixed, ratios=[0.75])) == {0.75: 0.5}
    # The protocol's own (the quick one's too): set by the engine from the speed it measures.
    assert intervals(plan.PROTOCOL) == {1.0: None, 0.5: None}
    assert intervals(plan.QUICK) == {1.0: None}
    assert plan.calibrated(plan.PROTOCOL) and plan.calibrated(plan.QUICK)
    assert not plan.calibrated(dict(plan.PROTOCOL, interval_s=0.5, read_bytes_per_s=64e6))


def test_the_machines_speed_sets_the_arrivals_by_offered_load_and_the_cap_by_read_steps():
    p = dict(plan.PROTOCOL, chunk_tokens=256, max_tokens=32, max_num_seqs=4,
             load={1.0: 2.0, 0.5: 1.0}, read_steps=4.0)
    # Two prompts: 1000 tokens (3 chunks stored at 100 %: 232 computed; 1 at 50 %: 744) and
    # 2000 (7 chunks at 100 %: 208 computed; 3 at 50 %: 1232).
    sets = {"1": [[5] * 1000], "2": [[5] * 2000]}
    assert plan.computed_tokens(sets, 1.0, 256) == (232 + 208) / 2
    assert plan.computed_tokens(sets, 0.5, 256) == (744 + 1232) / 2
    speed = {"prefill_s_per_token": 1e-3, "decode_step_s": 0.02}
    intervals, cap = plan.scale(p, sets, speed, kv_bytes_per_token=1000)
    decode = 32 * 0.02 / 4  # a request's share of the batch's decode steps
    assert intervals[1.0] == pytest.approx((220 * 1e-3 + decode) / 2.0)
    assert intervals[0.5] == pytest.approx((988 * 1e-3 + decode) / 1.0)
    assert cap == pytest.approx(1500 * 1000 / (4.0 * 0.02))  # a mean prompt's KV in 4 steps
    # A machine twice as fast: arrivals twice as often, reads twice as fast (same proportions).
    fast = {k: v / 2 for k, v in speed.items()}
    intervals2, cap2 = plan.scale(p, sets, fast, kv_bytes_per_token=1000)
    assert intervals2 == {k: pytest.approx(v / 2) for k, v in intervals.items()}
    assert cap2 == pytest.approx(2 * cap)
    # What the user fixed stays.
    assert plan.scale(dict(p, interval_s=0.3, read_bytes_per_s=64e6), sets, speed, 1000) == (
        {1.0: 0.3, 0.5: 0.3}, 64e6)
    # The runs' caps: the stored part of a prompt reads as long at 50 % as at 100 %, unless the
    # user gave the cap (one for every ratio).
    scaled = dict(p, read_bytes_per_s=cap)
    assert plan.cap_at(scaled, 1.0) == pytest.approx(cap)
    assert plan.cap_at(scaled, 0.5) == pytest.approx(cap / 2)
    assert plan.cap_at(dict(scaled, read_cap_scales_with_ratio=False), 0.5) == pytest.approx(cap)
    assert plan.cap_at(plan.PROTOCOL, 0.5) is None  # not calibrated yet
    assert plan.read_cap_flags(0) == []
    assert plan.read_cap_flags(64e6) == ["--set", "store.read_bytes_per_s=64000000",
                                         "--set", "controller.prior_read_bytes_per_s=64000000"]


def test_repeats_run_every_policy_again_in_reverse_order_with_names_of_their_own(tmp_path):
    p = dict(plan.QUICK, ratios=[1.0, 0.5])
    _, _, once = plan.build("fig4-policies", plan.SIX, [1, 2], p, str(tmp_path))
    _, _, runs = plan.build("fig4-policies", plan.SIX, [1, 2], p, str(tmp_path), repeats=3)
    assert len(runs) == 3 * len(once)
    assert len({r["name"] for r in runs}) == len(runs)
    for seed in (1, 2):
        for ratio in (1.0, 0.5):
            first = [r["label"] for r in once if (r["seed"], r["ratio"]) == (seed, ratio)]
            group = [r for r in runs if (r["seed"], r["ratio"]) == (seed, ratio)]
            by_repeat = [[r["label"] for r in group if r["repeat"] == k] for k in range(3)]
            # Repeat 0 is the order of a single run, repeat 1 its reverse (a linear drift of
            # the machine's speed favours no policy over a pair), repeat 2 the order again.
            assert by_repeat == [first, first[::-1], first]
            assert [r["repeat"] for r in group] == [0] * 6 + [1] * 6 + [2] * 6
    assert all(r["repeat"] == 0 and not r["name"].endswith("-k0") for r in once)
