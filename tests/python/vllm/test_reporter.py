"""StepReporter: what one vLLM step becomes in adapter calls (v1 protocol)."""

from tempokv.vllm.reporter import Snapshot, StepReporter


class Recorder:
    def __init__(self):
        self.calls = []

    def __getattr__(self, op):
        return lambda *a, **kw: self.calls.append((op, a, kw))


def test_requests_are_admitted_once_and_leave_the_waiting_order_for_good():
    c = Recorder()
    r = StepReporter(c)
    r.step(Snapshot(waiting=[(1, 100), (2, 200), (9, 50)], step_estimate_s=0.25), known={1, 2})
    assert c.calls == [("update_order", ([1, 2],), {"boundary_in_ns": 250_000_000})]
    c.calls.clear()
    # 1 is scheduled (its KV loading), 2 still waits.
    r.step(Snapshot(waiting=[(2, 200)], running=[(1, 0, 0, 100)]), known={1, 2})
    assert c.calls == [("update_order", ([2],), {"boundary_in_ns": 0}),
                       ("admitted", (1,), {})]
    c.calls.clear()
    # 1 is back in vLLM's queue (its load failed): not waiting for the adapter; it prefills.
    r.step(Snapshot(waiting=[(1, 100), (2, 200)], running=[(1, 0, 0, 100)], prefills=[1]),
           known={1, 2})
    assert c.calls == [("update_order", ([2],), {"boundary_in_ns": 0}),
                       ("iteration_started", ([1], []), {})]
    c.calls.clear()
    r.step(Snapshot(running=[(1, 100, 3, 100)], decoders=[1]), known={1, 2})
    assert c.calls == [("update_order", ([],), {"boundary_in_ns": 0}),
                       ("prefill_done", (1,), {}), ("tokens_generated", (1, 3), {}),
                       ("iteration_started", ([], [1]), {})]
    c.calls.clear()
    r.finished(1, 3)
    assert c.calls == [("finished", (1, 3), {})]
