"""Protocol v2's step op from the Python client against a real tempokvd."""

import unittest

import tempokvd_fixture as fx

fx.require_daemon()

from tempokv import FailedPrecondition, NotFound  # noqa: E402

MODEL = 4


class StepTest(fx.DaemonTestCase):

    def test_steps_drive_a_request_and_a_bad_step_is_a_late_error(self):
        c = self.client()
        self.assertEqual(c.hello["version"], 3)
        data = bytes(range(256)) * 4096
        c.put((MODEL, 1), 0, 16, data)
        c.step(queued=[(1, 2048, 512, len(data), 16)], waiting=[1])
        c.report_hit(1, [(MODEL, 1, len(data))])  # the step queued it first: calls keep order
        c.step(prefills=[(1, 1536)])
        with self.assertRaises(FailedPrecondition):
            c.admitted(1)  # the step admitted it
        if c.request_retrieval(1) == "wait":
            c.wait_ready(1)
        (offset, nbytes), = c.objects(1)
        self.assertEqual(bytes(c.read_object(offset, nbytes)), data)
        c.begin_transfer(1)
        c.end_transfer(1)
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


if __name__ == "__main__":
    unittest.main()
