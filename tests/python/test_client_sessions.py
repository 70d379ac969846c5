"""TempoKVClient against a real tempokvd: sessions over time (timeouts, a put that waits for
durability, bye, two sessions of one runtime, declared ranks, a killed client, a silent one)."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import unittest

import tempokvd_fixture as fx

fx.require_daemon()

from client_case import MODEL, ClientCase, live_claims, payload  # noqa: E402
from tempokv import FailedPrecondition, NotFound, TempoKVClient, Unavailable  # noqa: E402


class ClientSessionTest(ClientCase):

    def test_timeout_raises_unavailable(self):
        endpoint = "ipc://" + os.path.join(self.daemon.data_dir, "nobody.sock")
        start = time.monotonic()
        with self.assertRaises(Unavailable) as cm:
            TempoKVClient(endpoint, timeout_s=0.3)
        self.assertLess(time.monotonic() - start, 5)
        # Nothing listens: no connection ever takes the hello (ZMQ_IMMEDIATE).
        self.assertIn("hello", cm.exception.message)
        self.assertIn("not reachable", cm.exception.message)

    def test_a_put_waits_for_durability_longer_than_other_calls(self):
        # The daemon stopped (SIGSTOP) for 1.5 s while a put waits: a put outlasts the 0.5 s
        # call timeout (put_timeout_s) and its object is stored; with put_timeout_s at the
        # calls' 0.5 s the same stall fails the put.
        def stall(seconds):
            os.kill(self.daemon.proc.pid, signal.SIGSTOP)
            time.sleep(seconds)
            os.kill(self.daemon.proc.pid, signal.SIGCONT)

        patient = self.client(name="patient", timeout_s=0.5, put_timeout_s=10)
        hasty = self.client(name="hasty", timeout_s=0.5, put_timeout_s=0.5)
        data = payload(7, 8192)
        for c, key, ok in ((patient, (MODEL, 71), True), (hasty, (MODEL, 72), False)):
            offset = c.reserve_write(len(data))  # answered before the stall, as in put()
            c.write_region[offset:offset + len(data)] = data
            t = threading.Timer(0.0, stall, (1.5,))
            t.start()
            time.sleep(0.2)  # stopped now: the put's reply waits for SIGCONT
            start = time.monotonic()
            if ok:
                c.put_reserved(key, 0, 16, offset, len(data))
                self.assertGreater(time.monotonic() - start, 0.5)
            else:
                with self.assertRaises(Unavailable):
                    c.put_reserved(key, 0, 16, offset, len(data))
            t.join()
        self.wait_for("the stalled puts to finish", lambda: patient.lookup([(MODEL, 71)]) == [8192])

    def test_bye_ends_the_session(self):
        c = self.client()
        objs = self.put_objects(c, [8192])
        self.claim(c, 5, objs)
        self.retrieve(c, 5)
        c.bye()
        with self.assertRaises(FailedPrecondition):
            c.heartbeat()
        watcher = self.client()
        self.wait_for("the claims of the ended runtime to be released",
                      lambda: (lambda s: s["sessions"] == 1 and live_claims(s) == 0 and
                               s["tier_protected_bytes"] == 0)(watcher.stats()))
        self.assertEqual(watcher.stats()["claims_abandoned_total"], 1)

    def test_two_sessions_of_one_runtime_share_a_claim(self):
        a = self.client(name="rank0", runtime="engine", max_active=8)
        b = self.client(name="rank1", runtime="engine")
        other = self.client(name="elsewhere")
        self.assertEqual(a.hello["runtime_id"], b.hello["runtime_id"])
        self.assertNotEqual(a.hello["session"], b.hello["session"])
        self.assertNotEqual(other.hello["runtime_id"], a.hello["runtime_id"])

        objs = self.put_objects(a, [64 * 1024, 3000])
        rid = 77
        self.claim(a, rid, objs)
        with self.assertRaises(NotFound):
            other.request_retrieval(rid)  # not its runtime's request
        _, path_a = self.retrieve(a, rid)
        _, path_b = self.retrieve(b, rid)
        self.assertEqual(path_a, path_b)
        spans_a, spans_b = a.objects(rid), b.objects(rid)
        self.assertEqual(spans_a, spans_b)
        for client in (a, b):
            for (offset, nbytes), (_, data) in zip(client.objects(rid), objs):
                self.assertEqual(client.read_object(offset, nbytes), data)

        def claim_held():
            s = other.stats()
            return live_claims(s), s["tier_protected_bytes"]

        held, protected = claim_held()
        self.assertEqual(held, 1)
        if path_a == "staged":
            self.assertEqual(other.stats()["claims_stage_ready"], 1)
            self.assertGreater(protected, 0)
        a.begin_transfer(rid)
        b.begin_transfer(rid)
        a.end_transfer(rid)
        held, protected_after_first = claim_held()
        self.assertEqual(held, 1, "the claim ended after the first of two end_transfers")
        self.assertEqual(protected_after_first, protected)
        with self.assertRaises(FailedPrecondition):
            a.end_transfer(rid)  # its own bracket is closed already
        b.end_transfer(rid)
        held, protected = claim_held()
        self.assertEqual(held, 0)
        self.assertEqual(protected, 0)
        s = other.stats()
        self.assertEqual(s["claims_stage_ready"], 0)
        self.assertEqual(s["claims_transferring"], 0)
        self.assertEqual(s["runtimes"], 2)

    def test_wait_sleeps_until_its_timeout_or_another_file_is_readable(self):
        c = self.client(name="waiter")
        t = time.monotonic()
        self.assertFalse(c.wait(0.2))  # nothing from the daemon: the whole timeout
        self.assertGreaterEqual(time.monotonic() - t, 0.19)
        r, w = os.pipe()
        try:
            threading.Timer(0.05, lambda: os.write(w, b"x")).start()
            t = time.monotonic()
            self.assertFalse(c.wait(5.0, fds=[r]))  # woken by the pipe, not the daemon
            self.assertLess(time.monotonic() - t, 2.0)
        finally:
            os.close(r)
            os.close(w)
        c.close()
        with self.assertRaises(FailedPrecondition):
            c.wait(0.1)

    def test_declared_ranks_need_no_barrier(self):
        a = self.client(name="rank0", runtime="tp", ranks=2)
        b = self.client(name="rank1", runtime="tp")
        objs = self.put_objects(a, [64 * 1024])
        self.claim(a, 5, objs)
        self.retrieve(a, 5)
        a.begin_transfer(5)
        a.end_transfer(5)  # rank 1 has not even asked yet: the claim must wait for it
        self.assertEqual(live_claims(a.stats()), 1)
        self.retrieve(b, 5)
        for (offset, nbytes), (_, data) in zip(b.objects(5), objs):
            self.assertEqual(b.read_object(offset, nbytes), data)
        b.begin_transfer(5)
        b.end_transfer(5)
        stats = a.stats()
        self.assertEqual(live_claims(stats), 0)
        self.assertEqual(stats["tier_protected_bytes"], 0)

    def test_killed_client_releases_its_claims(self):
        c = self.client(name="observer")
        objs = self.put_objects(c, [128 * 1024, 4096])
        manifest = [(k[0], k[1], len(d)) for k, d in objs]
        child_code = textwrap.dedent(f"""
            import sys, time
            sys.path.insert(0, {fx.PYTHON_DIR!r})
            from tempokv import TempoKVClient
            c = TempoKVClient({self.daemon.endpoint!r}, name="doomed")
            c.add_request(9, 64, 32, {sum(len(d) for _, d in objs)}, 16)
            c.report_hit(9, {manifest!r})
            c.update_order([9])
            if c.request_retrieval(9) == "wait":
                c.wait_ready(9)
            print("READY", flush=True)
            time.sleep(60)
        """)
        child = subprocess.Popen([sys.executable, "-c", child_code], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
        try:
            line = child.stdout.readline()
            self.assertEqual(line.strip(), b"READY", child.stderr.read() if not line else line)
            s = c.stats()
            self.assertEqual(s["sessions"], 2)
            self.assertEqual(live_claims(s), 1)
            self.assertGreater(s["tier_protected_bytes"] + s["tier_reserved_bytes"], 0)
            child.send_signal(signal.SIGKILL)
            child.wait()
            killed = time.monotonic()
            self.wait_for("tier_protected_bytes == 0 after the client was killed",
                          lambda: (lambda s: s["tier_protected_bytes"] == 0 and
                                   s["tier_reserved_bytes"] == 0 and live_claims(s) == 0)(
                                       c.stats()),
                          timeout_s=fx.HEARTBEAT_TIMEOUT_S + 1.0)
            self.assertLessEqual(time.monotonic() - killed, fx.HEARTBEAT_TIMEOUT_S + 1.0)
            s = c.stats()
            self.assertEqual(s["sessions"], 1)
            self.assertEqual(s["claims_abandoned_total"], 1)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            child.stdout.close()
            child.stderr.close()

    def test_silent_session_times_out_and_polling_keeps_it(self):
        # Only a client that neither heartbeats in the background nor says hello again is
        # silent (test_recovery.py covers the defaults).
        quiet = self.client(name="quiet", background_heartbeat=False, reconnect=False)
        busy = self.client(name="busy")
        objs = self.put_objects(busy, [4096])
        self.claim(quiet, 1, objs)
        self.claim(busy, 2, objs)
        self.retrieve(quiet, 1)
        self.retrieve(busy, 2)
        # busy polls (poll() heartbeats); quiet sends nothing for 1.5 heartbeat timeouts.
        end = time.monotonic() + fx.HEARTBEAT_TIMEOUT_S * 1.5
        while time.monotonic() < end:
            busy.poll(0.05)
        s = busy.stats()
        self.assertEqual(s["sessions"], 1)
        self.assertEqual(s["sessions_timed_out_total"], 1)
        self.assertEqual(live_claims(s), 1)  # busy's claim only
        with self.assertRaises(FailedPrecondition):
            quiet.heartbeat()  # the daemon ended that session
        busy.begin_transfer(2)
        busy.end_transfer(2)
        self.assertEqual(busy.stats()["tier_protected_bytes"], 0)


if __name__ == "__main__":
    unittest.main()
