"""Clients that recover (issue 13): the Python client against a real tempokvd that is stopped
and started again on the same data directory."""

import time
import unittest

import tempokvd_fixture as fx

fx.require_daemon()

from tempokv import Unavailable  # noqa: E402
from tempokv.errors import ClaimLost  # noqa: E402

MODEL = 3


class RecoveryTest(fx.DaemonTestCase):

    def put(self, c, first_hash, n, size=1 << 20):
        out = []
        for i in range(n):
            key = (MODEL, first_hash + i)
            data = bytes((first_hash * 31 + j * 7) & 0xFF for j in range(256)) * (size // 256)
            c.put(key, i * 16, (i + 1) * 16, data)
            out.append((key, data))
        return out

    def stage(self, c, request_id, objs):
        c.add_request(request_id, 4096, 1024, sum(len(d) for _, d in objs), 16)
        c.report_hit(request_id, [(k[0], k[1], len(d)) for k, d in objs])
        c.update_order([request_id])
        if c.request_retrieval(request_id) == "wait":
            c.wait_ready(request_id)

    def test_idle_client_keeps_its_session_past_the_heartbeat_timeout(self):
        c = self.client()
        objs = self.put(c, 10, 1)
        c.add_request(1, 4096, 1024, len(objs[0][1]), 16)
        time.sleep(fx.HEARTBEAT_TIMEOUT_S * 1.6)  # no call from this thread
        c.report_hit(1, [(MODEL, 10, len(objs[0][1]))])  # the same session still knows it
        self.assertEqual(c.recoveries, 0)
        self.assertEqual(c.stats()["sessions_closed_total"], 0)

    def test_client_recovers_from_a_restart_and_reports_lost_claims(self):
        c = self.client()
        first = c.instance
        self.assertTrue(first)
        objs = self.put(c, 20, 2)
        self.stage(c, 1, objs)  # ready: its spans point into the old tier
        self.assertEqual(self.daemon.restart(), 0)
        # The first call that reaches the new daemon finds the session gone and says hello again.
        sizes = self.lookup_when_back(c, [k for k, _ in objs])
        self.assertEqual(sizes, [len(d) for _, d in objs])
        self.assertEqual(c.recoveries, 1)
        self.assertNotEqual(c.instance, first)
        with self.assertRaises(ClaimLost):
            c.objects(1)
        self.stage(c, 2, objs)  # the new tier is mapped
        for (offset, nbytes), (_, data) in zip(c.objects(2), objs):
            self.assertEqual(bytes(c.read_object(offset, nbytes)), data)
        c.begin_transfer(2)
        c.end_transfer(2)

    def test_lookup_against_a_daemon_that_is_down_fails_fast(self):
        c = self.client(timeout_s=5.0)
        objs = self.put(c, 30, 1)
        self.daemon.stop()
        start = time.monotonic()
        with self.assertRaises(Unavailable):
            c.lookup([objs[0][0]])
        took = time.monotonic() - start
        # Not the call timeout: the lookup timeout defaults to a quarter of a second.
        self.assertLess(took, 2.5, f"a lookup waited {took:.2f} s for a daemon that is down")
        self.daemon.restart()
        self.assertEqual(self.lookup_when_back(c, [objs[0][0]]), [len(objs[0][1])])

    @staticmethod
    def lookup_when_back(c, keys):
        """A lookup, retried while the restarted daemon is not reachable yet (the socket
        reconnects within about 100 ms)."""
        deadline = time.monotonic() + 5
        while True:
            try:
                return c.lookup(keys)
            except Unavailable:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


if __name__ == "__main__":
    unittest.main()
