"""StepReporter: what one vLLM step becomes in protocol v2 step messages."""

import json

from tempokv.vllm.reporter import Snapshot, StepReporter


class Recorder:
    """A client that records each step's arguments and numbers them as the real one does."""

    def __init__(self):
        self.steps = []

    def step(self, **kw):
        self.steps.append(kw)
        return len(self.steps)


def test_requests_are_admitted_once_and_the_waiting_order_is_vllms():
    c = Recorder()
    r = StepReporter(c)
    r.queued(2, 200, 16)
    r.step(Snapshot(waiting=[(1, 100), (2, 200), (9, 50)], step_estimate_s=0.25), known={1})
    assert c.steps == [dict(prefills=[], decoders=[], finished=[], queued=[(2, 200, 0, 0, 16)],
                            waiting=[1, 2], boundary_in_ns=250_000_000, admitted=[],
                            measured=[])]
    # 1 is scheduled (its KV loading), 2 still waits.
    r.step(Snapshot(waiting=[(2, 200)], running=[(1, 0, 0, 100)]), known={1, 2})
    assert c.steps[-1]["admitted"] == [1] and c.steps[-1]["waiting"] == [2]
    # 1 is back in vLLM's queue (its load failed; the daemon leaves it out of the order, not
    # admitted again); it prefills (iteration 1 of the scheduler), a 60-token chunk.
    r.step(Snapshot(waiting=[(1, 100), (2, 200)], running=[(1, 40, 0, 100)],
                    prefills=[(1, 60)], iteration=1), known={1, 2})
    assert c.steps[-1]["prefills"] == [(1, 60)] and c.steps[-1]["waiting"] == [1, 2]
    assert c.steps[-1]["admitted"] == []
    # Iteration 1 took 0.5 s: the next step carries it as step 3's (the one that started it).
    r.step(Snapshot(waiting=[(2, 200)], running=[(1, 100, 1, 100)], decoders=[1], iteration=2,
                    measured=[(1, 0.5)]), known={1, 2})
    assert c.steps[-1]["decoders"] == [1] and c.steps[-1]["measured"] == [(3, 500_000_000)]
    assert len(c.steps) == 4
    r.finished(1, 3)
    r.flush()  # no step is coming: what is pending goes now, the waiting order unchanged
    assert c.steps[-1]["finished"] == [(1, 3)] and c.steps[-1]["waiting"] == [2]


def test_a_step_that_says_nothing_new_is_not_sent():
    c = Recorder()
    r = StepReporter(c)
    assert r.step(Snapshot(waiting=[(1, 100)]), known={1}) == 1
    assert r.step(Snapshot(waiting=[(1, 100)]), known={1}) is None
    assert r.step(Snapshot(waiting=[(7, 100)]), known={1}) == 2  # the order changed
    r.flush()
    assert len(c.steps) == 2


def test_a_request_that_finishes_before_any_step_is_never_mentioned():
    c = Recorder()
    r = StepReporter(c)
    r.queued(5, 100, 4)
    r.finished(5, 0)
    r.forget(6)
    r.flush()
    assert c.steps == []


def test_the_step_log_has_one_line_per_step_sent_with_its_fields(tmp_path):
    path = tmp_path / "steps.jsonl"
    c = Recorder()
    r = StepReporter(c, log_path=str(path))
    r.queued(2, 200, 16)
    r.step(Snapshot(waiting=[(1, 100), (2, 200)]), known={1})
    assert r.step(Snapshot(waiting=[(1, 100), (2, 200)]), known={1, 2}) is None  # not sent
    r.step(Snapshot(waiting=[(2, 200)], running=[(1, 0, 0, 100)]), known={1, 2})
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [x["seq"] for x in lines] == [1, 2]
    assert lines[0]["queued"] == [[2, 200, 0, 0, 16]] and lines[0]["waiting"] == [1, 2]
    assert lines[1]["admitted"] == [1] and lines[0]["t"] <= lines[1]["t"]


def test_a_step_log_that_cannot_be_written_is_dropped_and_the_steps_still_go(tmp_path, capsys):
    c = Recorder()
    r = StepReporter(c, log_path=str(tmp_path / "missing" / "steps.jsonl"))
    r.step(Snapshot(waiting=[(1, 100)]), known={1})
    r.step(Snapshot(waiting=[(7, 100)]), known={7})
    assert len(c.steps) == 2
    assert capsys.readouterr().err.count("step log") == 1
