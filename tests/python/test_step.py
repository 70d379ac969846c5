"""Protocol v2's step op from the Python client against a real tempokvd."""

import random
import time
import unittest

import tempokvd_fixture as fx

fx.require_daemon()

from tempokv import FailedPrecondition, InvalidArgument, NotFound  # noqa: E402

MODEL = 4


class StepTest(fx.DaemonTestCase):

    def read_back(self, c, rid, data):
        """Request rid's claim: its bytes once ready, then its transfer begun and ended."""
        if c.request_retrieval(rid) == "wait":
            c.wait_ready(rid)
        (offset, nbytes), = c.objects(rid)
        self.assertEqual(bytes(c.read_object(offset, nbytes)), data)
        c.begin_transfer(rid)
        c.end_transfer(rid)

    def test_steps_drive_a_request_and_a_bad_step_is_a_late_error(self):
        c = self.client()
        self.assertEqual(c.hello["version"], 4)
        data = bytes(range(256)) * 4096
        c.put((MODEL, 1), 0, 16, data)
        c.step(queued=[(1, 2048, 512, len(data), 16)], waiting=[1])
        c.report_hit(1, [(MODEL, 1, len(data))])  # the step queued it first: calls keep order
        c.step(prefills=[(1, 1536)])
        with self.assertRaises(FailedPrecondition):
            c.admitted(1)  # the step admitted it
        self.read_back(c, 1, data)
        c.step(decoders=[1])
        c.step(decoders=[1])
        c.step(finished=[(1, 3)])
        c.add_request(1, 2048, 512, len(data), 16)  # finished: the id is free again
        self.assertEqual(c.late_errors, 0, c.last_late_error)
        s = c.stats()
        self.assertEqual(s["steps_total"], 5)
        self.assertEqual(s["steps_missed_total"], 0)
        c.step(decoders=[999])
        c.heartbeat()
        self.assertEqual(c.late_errors, 1)
        self.assertIsInstance(c.last_late_error, NotFound)

    def test_a_request_added_with_its_hit_is_claimed_or_not_added(self):
        """Version 4: add_request with its manifest, one call; a refused hit takes it back."""
        c = self.client()
        data = bytes(range(256)) * 4096
        c.put((MODEL, 7), 0, 16, data)
        calls = c.stats()["requests_total"]
        c.add_request(1, 2048, 512, len(data), 16, manifest=[(MODEL, 7, len(data))])
        self.assertEqual(c.stats()["requests_total"] - calls, 2)  # the add and this stats call
        c.step(prefills=[(1, 1536)])
        self.read_back(c, 1, data)
        with self.assertRaises(InvalidArgument):
            c.add_request(2, 2048, 512, len(data), 16,
                          manifest=[(MODEL, 7, len(data)), (MODEL, 7, len(data))])
        with self.assertRaises(NotFound):
            c.report_hit(2, [(MODEL, 7, len(data))])  # request 2 was not added

    def test_after_a_late_error_the_next_step_goes_in_full(self):
        """A late error the client reads only before its next step: that step goes in full."""
        c = self.client()
        ids = list(range(1, 21))
        c.step(queued=[(i, 1024, 0, 0, 8) for i in ids], waiting=ids)
        c.step(waiting=ids)
        c.step(waiting=ids, decoders=[999])  # no request of the runtime: an error reply
        time.sleep(0.3)  # the reply arrives; nothing reads it before the next step
        c.step(waiting=ids)
        c.heartbeat()
        self.assertEqual(c.late_errors, 1)
        s = c.stats()
        self.assertEqual(s["steps_total"], 4)
        self.assertEqual(s["step_edits_total"], 2)  # steps 2 and 3, not 4

    def test_steps_as_edits_leave_the_runtime_where_steps_in_full_do(self):
        """The same engine's steps, as edits (version 4) and in full: the runtimes end alike."""
        edits = self.client(runtime="edits")
        full = self.client(runtime="full", step_edits=False)
        engines = [Engine(5), Engine(5)]
        names = ["adapter_waiting_requests", "adapter_running_requests", "adapter_cost_scale",
                 "adapter_decode_scale", "adapter_iterations_calibrated_total"]
        for n in range(200):
            for c, engine in zip((edits, full), engines):
                c.step(**engine.next())
            if n % 40 == 39:
                got = []
                for c in (edits, full):
                    c.heartbeat()
                    self.assertEqual(c.late_errors, 0, c.last_late_error)
                    s, rid = c.stats(), c.hello["runtime_id"]
                    got.append([s[f"{name}_{rid}"] for name in names])
                self.assertEqual(got[0], got[1], f"after step {n}")
        s = edits.stats()
        self.assertGreater(s[f"adapter_waiting_requests_{edits.hello['runtime_id']}"], 30)
        self.assertGreater(s["step_edits_total"], 150)
        self.assertLess(s["step_edits_total"], 199)  # the shuffled orders went in full


class Engine:
    """An engine's steps: requests join, the queue's head is admitted, decoders finish, now and
    then the order is reshuffled (a priority); each step measures the one before."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.decoders, self.prefilled, self.waiting = [], [], []
        self.next_id, self.seq = 1, 0

    def next(self):
        rng = self.rng
        finished = [(i, 10) for i in self.decoders if rng.random() < 1 / 16]
        ended = {i for i, _ in finished}
        decoders = [i for i in self.decoders if i not in ended] + self.prefilled
        admit = min(len(self.waiting), rng.randrange(4))
        self.prefilled = self.waiting[:admit]
        self.waiting = self.waiting[admit:]
        queued = []
        for _ in range(rng.randrange(5)):
            queued.append((self.next_id, 512 + self.next_id * 97 % 3000, 0, 0, 64))
            self.waiting.append(self.next_id)
            self.next_id += 1
        if rng.random() < 0.1:
            rng.shuffle(self.waiting)
        self.decoders = decoders
        measured = [(self.seq, 10_000_000 + 37_000 * (self.seq % 50))] if self.seq else []
        self.seq += 1
        return dict(finished=finished, decoders=decoders, queued=queued,
                    prefills=[(i, 512 + i * 97 % 3000) for i in self.prefilled],
                    waiting=list(self.waiting), boundary_in_ns=20_000_000, measured=measured)


class StepListEditsTest(unittest.TestCase):
    """wire.step_list_edits against an independent reading of the edits (docs/protocol.md)."""

    @staticmethod
    def apply(last, edits):
        gone, new_decoders, taken, new_waiting = edits
        decoders = [i for i in last[0] if i not in set(gone)] + list(new_decoders)
        return decoders, last[1][taken:] + list(new_waiting)

    def test_edits_read_back_to_the_lists_or_are_not_made(self):
        from tempokv.wire import step_list_edits
        rng = random.Random(11)
        made = 0
        for _ in range(2000):
            ids = rng.sample(range(1, 400), 60)
            last = (ids[:20], ids[20:50])
            decoders = [i for i in last[0] if rng.random() > 0.1] + ids[50:50 + rng.randrange(4)]
            waiting = last[1][rng.randrange(4):] + ids[55:55 + rng.randrange(5)]
            if rng.random() < 0.2:
                rng.shuffle(waiting)
            if rng.random() < 0.1:
                rng.shuffle(decoders)
            edits = step_list_edits(last, decoders, waiting)
            if edits is None:
                continue
            made += 1
            self.assertEqual(self.apply(last, edits), (decoders, waiting))
            self.assertLess(len(edits[0]) + len(edits[1]) + len(edits[3]),
                            len(decoders) + len(waiting))
        self.assertGreater(made, 1200)
        # A decoder listed twice that stays cannot be said by removals.
        self.assertIsNone(step_list_edits(([7, 8, 7], []), [7, 8], [1, 2, 3]))


if __name__ == "__main__":
    unittest.main()
