"""The experiment's plan: every policy once per (seed, ratio, rate), in an order that changes
with the seed (TempoKV is not always the last to run while the machine's load drifts)."""

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
    assert intervals(plan.PROTOCOL) == {1.0: 0.15, 0.5: 0.5}
    assert intervals(dict(plan.PROTOCOL, interval_s=0.3)) == {1.0: 0.3, 0.5: 0.3}
    assert intervals(dict(plan.PROTOCOL, ratios=[0.75])) == {0.75: 0.5}
    assert intervals(plan.QUICK) == {1.0: 0.5}
