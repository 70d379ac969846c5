"""tempokvd's /claims read through the experiment's Daemon.claims(): the daemon's times come
back on time.monotonic()'s clock, so they line up with the driver's request times."""

import shutil
import tempfile
import time
import unittest

import tempokvd_fixture as fx

fx.require_daemon()

from tempokv import TempoKVClient  # noqa: E402
from tempokv.e2e.daemon import Daemon  # noqa: E402

MODEL = 0x5EED_0000_0000_0002


class ClaimLogTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tempokv-claims-")
        flags = [f for f in fx.DAEMON_FLAGS if f not in ("--metrics", "")]
        self.daemon = Daemon(fx.tempokvd_path(), self.dir, flags, metrics=True)

    def tearDown(self):
        self.daemon.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_an_ended_claim_comes_back_timed_on_the_monotonic_clock(self):
        with TempoKVClient(self.daemon.endpoint, name="claims") as c:
            c.put((MODEL, 1), 0, 16, b"k" * 65536)
            self.assertEqual(self.daemon.claims(), [])
            before = time.monotonic()
            c.add_request(7, 64, 16, 65536, 16)
            c.report_hit(7, [(MODEL, 1, 65536)])
            c.update_order([7])
            ready = []
            if c.request_retrieval(7, on_ready=lambda *a: ready.append(a)) == "wait":
                deadline = time.monotonic() + 10
                while not ready and time.monotonic() < deadline:
                    c.poll(0.1)
            c.admitted(7)
            c.begin_transfer(7)
            c.end_transfer(7)
            after = time.monotonic()
        claims = self.daemon.claims()
        self.assertEqual(len(claims), 1, claims)
        k = claims[0]
        self.assertEqual(k["request"], 7)
        self.assertEqual(k["footprint_bytes"] >= 65536, True)
        for name in ("reported_s", "committed_s", "ready_s", "retrieval_requested_s",
                     "transfer_start_s", "transfer_end_s", "released_s"):
            # Shifted by the answer's latency at most (a few ms here), not by the daemon's age.
            self.assertGreaterEqual(k[name], before - 0.05, name)
            self.assertLessEqual(k[name], after + 0.05, name)
        self.assertLessEqual(k["reported_s"], k["committed_s"])
        self.assertLessEqual(k["transfer_end_s"], k["released_s"])


if __name__ == "__main__":
    unittest.main()
