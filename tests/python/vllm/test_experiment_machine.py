"""The experiment's check that the engine measured its speed on a quiet machine."""

import pytest

from tempokv.experiment import machine, plan

STAT = """cpu  100 5 50 1000 7 3 2 4 9 0
cpu0 50 2 25 500 3 1 1 2 4 0
intr 12345
"""


def test_busy_seconds_count_user_nice_system_irq_softirq_and_steal_not_idle():
    # 100 + 5 + 50 + 3 + 2 + 4 = 164 ticks busy; idle 1000 and iowait 7 are not.
    assert machine.busy_seconds(STAT, 100) == pytest.approx(1.64)
    with pytest.raises(ValueError):
        machine.busy_seconds("intr 1\n", 100)


def test_foreign_load_is_the_machines_busy_time_less_this_process_own():
    # Between the two samples the machine was busy 3 s more; this process's own CPU time (a
    # busy loop) is subtracted, so what is left is the other processes' share of the wall time.
    ticks = iter([0, 300])

    def stat():
        return f"cpu  {next(ticks)} 0 0 0 0 0 0 0\n"

    load = machine.ForeignLoad(read_stat=stat, ticks_per_s=100)
    load.start()
    import time
    t0 = time.process_time()
    while time.process_time() - t0 < 0.05:
        pass
    fc = load.stop()
    assert fc is not None and fc > 1  # 3 s of busy time within a fraction of a second
    # Unknown without /proc/stat: never judged busy.
    def missing():
        raise OSError("no /proc")
    gone = machine.ForeignLoad(read_stat=missing, ticks_per_s=100)
    gone.start()
    assert gone.stop() is None


def test_a_busy_measurement_is_repeated_and_the_quietest_kept():
    said, slept = [], []
    loads = iter([1.6, 0.9, 0.2, 0.0])

    def measure():
        return {"decode_step_s": 0.01, "foreign_cores": next(loads)}

    best = machine.pick(measure, attempts=3, sleep=slept.append,
                        say=lambda *a, **k: said.append(a[0]))
    assert best["foreign_cores"] == 0.2 and best["attempts"] == 3 and not best["busy"]
    assert slept == [machine.PAUSE_S, machine.PAUSE_S] and len(said) == 2
    # A quiet first measurement is kept at once.
    best = machine.pick(lambda: {"foreign_cores": 0.1}, sleep=slept.append, say=said.append)
    assert best["attempts"] == 1 and not best["busy"]
    # Busy every time: the quietest is used and marked, with a warning.
    said.clear()
    loads = iter([1.2, 0.8, 1.5])
    best = machine.pick(lambda: {"foreign_cores": next(loads)}, attempts=3,
                        sleep=lambda s: None, say=lambda *a, **k: said.append(a[0]))
    assert best["foreign_cores"] == 0.8 and best["busy"] and best["attempts"] == 3
    assert "WARNING: calibrated on a busy machine (0.80 cores" in said[-1]
    # Unknown load (no /proc/stat): one measurement, not busy.
    best = machine.pick(lambda: {"foreign_cores": None}, sleep=slept.append, say=said.append)
    assert best["attempts"] == 1 and not best["busy"]


def test_the_quick_protocol_measures_once_the_full_one_up_to_three_times():
    assert plan.QUICK["calibration_attempts"] == 1
    assert plan.PROTOCOL["calibration_attempts"] == machine.ATTEMPTS == 3
