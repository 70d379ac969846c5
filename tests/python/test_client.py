"""TempoKVClient against a real tempokvd (docs/protocol.md, version 1)."""

import mmap
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

import msgpack  # noqa: E402
import zmq  # noqa: E402

import tempokv  # noqa: E402
from tempokv import (  # noqa: E402
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    TempoKVClient,
    TempoKVError,
    Unavailable,
)

MODEL = 0x5EED_0000_0000_0001
HELLO_FIELDS = {
    "version": int, "server": str, "max_message_bytes": int, "max_manifest_entries": int,
    "session": int, "runtime_id": int, "heartbeat_timeout_ms": int, "tier_path": str,
    "tier_bytes": int, "write_path": str, "write_bytes": int,
}
# The claim states of the `claims` gauge, as stats() names them (claims_<state>, lower case).
LIVE_CLAIM_STATES = ("planned", "staging", "stage_ready", "transferring", "ordinary")


def payload(i, nbytes):
    """Deterministic, distinct bytes for object i."""
    block = bytes((i * 31 + j) & 0xFF for j in range(251))
    return (block * (nbytes // len(block) + 1))[:nbytes]


def live_claims(stats):
    return sum(stats[f"claims_{s}"] for s in LIVE_CLAIM_STATES)


class ClientTest(fx.DaemonTestCase):

    def put_objects(self, c, sizes, first_hash=1):
        """Puts one object per size; returns [(key, payload)]."""
        out = []
        for i, n in enumerate(sizes):
            key = (MODEL, first_hash + i)
            data = payload(first_hash + i, n)
            c.put(key, i * 16, (i + 1) * 16, data)
            out.append((key, data))
        return out

    def claim(self, c, request_id, objs, prompt_tokens=64):
        """add_request + report_hit + update_order for a claim on objs."""
        c.add_request(request_id, prompt_tokens, 16 * len(objs), sum(len(d) for _, d in objs), 16)
        c.report_hit(request_id, [(k[0], k[1], len(d)) for k, d in objs])
        c.update_order([request_id])

    def retrieve(self, c, request_id):
        """request_retrieval; on wait, polls until the notification. Returns (answer, path)."""
        calls = []
        answer = c.request_retrieval(request_id,
                                     on_ready=lambda *args: calls.append(args))
        if answer == "wait":
            self.wait_for(f"ready notification of {request_id}", lambda: calls, poll=c)
            self.assertEqual(len(calls), 1)
            rid, path, error = calls[0]
            self.assertEqual(rid, request_id)
            self.assertIsNone(error)
            self.assertIn(path, ("staged", "ordinary"))
            return answer, path
        self.assertIn(answer, ("ready", "ordinary_ready"))
        self.assertEqual(calls, [])
        return answer, "staged" if answer == "ready" else "ordinary"

    # ------------------------------------------------------------------------------------------

    def test_hello_result_and_mappings(self):
        c = self.client(name="hello-test")
        for field, typ in HELLO_FIELDS.items():
            self.assertIn(field, c.hello)
            self.assertIsInstance(c.hello[field], typ, field)
        self.assertEqual(c.hello["version"], 3)
        self.assertEqual(c.hello["max_message_bytes"], 1 << 20)
        self.assertEqual(c.hello["max_manifest_entries"], 16384)
        self.assertEqual(c.hello["heartbeat_timeout_ms"], int(fx.HEARTBEAT_TIMEOUT_S * 1000))
        self.assertEqual(c.hello["tier_bytes"], 64 << 20)
        self.assertEqual(c.hello["write_bytes"], 0)  # the runtime's region comes with a put
        self.assertTrue(c.hello["server"])

        # The tier: mapped read-only, all of it.
        self.assertIsInstance(c.tier, mmap.mmap)
        self.assertEqual(len(c.tier), c.hello["tier_bytes"])
        with self.assertRaises(TypeError):
            c.tier[0:1] = b"x"
        view = c.read_object(0, 4096)
        self.assertTrue(view.readonly)
        self.assertEqual(len(view), 4096)
        view.release()
        with self.assertRaises(InvalidArgument):
            c.read_object(c.hello["tier_bytes"] - 1, 2)
        # The write region: the runtime's own, named by the first reservation, mapped
        # read-write, the same file the daemon maps.
        self.assertIsNone(c.write_region)
        offset = c.reserve_write(4096)
        self.assertEqual(len(c.write_region), 64 << 20)
        c.write_region[offset:offset + 5] = b"hello"
        with open(c._write_path, "rb") as f:
            f.seek(offset)
            self.assertEqual(f.read(5), b"hello")
        # A put whose bytes changed after the client hashed them stores nothing.
        import xxhash
        meant = xxhash.xxh3_128_intdigest(b"hellp")
        with self.assertRaises(InvalidArgument) as e:
            c.put_reserved((MODEL, 77), 0, 16, offset, 5, checksum=meant)
        self.assertIn("not the checksum the put declared", str(e.exception))
        self.assertEqual(c.lookup([(MODEL, 77)]), [0])
        offset = c.reserve_write(4096)
        c.write_region[offset:offset + 5] = b"hellp"
        c.put_reserved((MODEL, 77), 0, 16, offset, 5, checksum=meant)
        self.assertEqual(c.lookup([(MODEL, 77)]), [5])

        # Another session without a runtime name gets a runtime of its own.
        d = self.client(map_shared_memory=False)
        self.assertNotEqual(d.hello["session"], c.hello["session"])
        self.assertNotEqual(d.hello["runtime_id"], c.hello["runtime_id"])
        self.assertIsNone(d.tier)
        with self.assertRaises(FailedPrecondition):
            d.put((MODEL, 1), 0, 1, b"x")
        self.assertEqual(c.stats()["sessions"], 2)

    def test_put_lookup_and_claim_lifecycle(self):
        c = self.client(name="lifecycle")
        # Unaligned small, 4 KiB-aligned >= 64 KiB (written without a copy), and odd-sized.
        objs = self.put_objects(c, [1000, 256 * 1024, 70001])
        keys = [k for k, _ in objs]
        self.assertEqual(c.lookup(keys + [(MODEL, 999)]), [len(d) for _, d in objs] + [0])
        self.assertEqual(c.lookup([]), [])
        stats = c.stats()
        self.assertEqual(stats["puts_total"], 3)
        self.assertEqual(stats["put_bytes_total"], sum(len(d) for _, d in objs))
        self.assertEqual(stats["write_region_used_bytes"], 0)
        self.assertEqual(stats["store_objects"], 3)

        rid = 42
        self.claim(c, rid, objs)
        answer, path = self.retrieve(c, rid)
        spans = c.objects(rid)
        self.assertEqual(len(spans), len(objs))
        for (offset, nbytes), (key, data) in zip(spans, objs):
            self.assertEqual(nbytes, len(data))
            view = c.read_object(offset, nbytes)
            self.assertEqual(view, data, f"object {key} in the tier")
            view.release()
        stats = c.stats()
        self.assertEqual(live_claims(stats), 1)
        if path == "staged":
            self.assertEqual(stats["claims_stage_ready"], 1)
            self.assertGreaterEqual(stats["tier_protected_bytes"], sum(len(d) for _, d in objs))

        c.admitted(rid)
        c.iteration_started([rid], [])
        c.begin_transfer(rid)
        if path == "staged":
            self.assertEqual(c.stats()["claims_transferring"], 1)
        c.object_transferred(rid, keys[0])
        c.end_transfer(rid)
        with self.assertRaises(NotFound):
            c.objects(rid)  # forgotten: the daemon may reuse the spans now
        c.prefill_done(rid)
        c.tokens_generated(rid, 2)
        c.finished(rid, 2)
        stats = c.stats()
        self.assertEqual(live_claims(stats), 0)
        self.assertEqual(stats["tier_protected_bytes"], 0)
        self.assertEqual(stats["tier_reserved_bytes"], 0)
        self.assertEqual(stats["claims_reported_total"], 1)

        # A cancelled claim is released too, and forgotten by the client.
        self.claim(c, rid + 1, objs[:1])
        c.cancel(rid + 1)
        with self.assertRaises(NotFound):
            c.objects(rid + 1)
        self.wait_for("the cancelled claim's release",
                      lambda: live_claims(c.stats()) == 0 and c.stats()["tier_protected_bytes"] == 0)

    def test_typed_errors(self):
        c = self.client()
        # Unknown request ids.
        for call in (lambda: c.admitted(999), lambda: c.finished(999, 1),
                     lambda: c.begin_transfer(999), lambda: c.request_retrieval(999),
                     lambda: c.report_hit(999, [(MODEL, 1, 10)])):
            with self.assertRaises((NotFound, FailedPrecondition)) as cm:
                call()
            self.assertIn("999", cm.exception.message)
        with self.assertRaises(NotFound):
            c.admitted(999)

        objs = self.put_objects(c, [4096])
        self.claim(c, 1, objs)
        # begin_transfer before any ready answer.
        with self.assertRaises(FailedPrecondition) as cm:
            c.begin_transfer(1)
        self.assertEqual(cm.exception.code, "FailedPrecondition")
        self.assertIsInstance(cm.exception, TempoKVError)
        with self.assertRaises(FailedPrecondition):
            c.end_transfer(1)
        with self.assertRaises(FailedPrecondition):
            c.add_request(1, 64, 0, 0, 16)  # in use
        with self.assertRaises(InvalidArgument):
            c.add_request(2, 0, 0, 0, 16)  # an empty prompt
        c.add_request(3, 64, 0, 0, 16)
        with self.assertRaises(FailedPrecondition):
            c.request_retrieval(3)  # no hit reported
        with self.assertRaises(InvalidArgument):
            c.put((MODEL, 7), 0, 1, b"x" * ((16 << 20) + 1))  # above the largest object
        self.assertEqual(c.stats()["write_region_used_bytes"], 0)
        # Client-side checks use the same classes.
        with self.assertRaises(InvalidArgument):
            c.admitted(-1)
        with self.assertRaises(InvalidArgument):
            c.put((MODEL, 7), 2, 1, b"x")
        # Error mapping: unknown codes give the base class.
        self.assertIs(type(tempokv.error_from_code("NoSuchCode", "m")), TempoKVError)
        self.assertIs(type(tempokv.error_from_code("IOError", "m")), tempokv.IOError)
        self.assertTrue(issubclass(tempokv.IOError, TempoKVError))
        self.assertEqual(c.stats()["request_errors_total"], 12)

    def test_malformed_messages_get_invalid_argument(self):
        c = self.client()
        ctx = zmq.Context()
        raw = ctx.socket(zmq.DEALER)
        raw.setsockopt(zmq.LINGER, 0)
        raw.connect(self.daemon.endpoint)

        def exchange(frame):
            raw.send(frame)
            self.assertTrue(raw.poll(5000), "no reply to a bad message")
            return msgpack.unpackb(raw.recv(), raw=False)

        try:
            cases = [
                (b"\xc1", None, "malformed MessagePack"),
                (b"", None, "empty message"),
                (msgpack.packb([1, 2]), None, "must be a map"),
                (msgpack.packb({"v": 1, "id": 5, "op": "no_such_op", "args": {}}), 5,
                 "unknown op 'no_such_op'"),
                (msgpack.packb({"v": 1, "id": 6, "op": "heartbeat", "args": {}}) + b"\x00", None,
                 "trailing bytes"),
                (msgpack.packb({"v": 1, "id": 7, "op": "admitted", "args": {"request_id": "x"}}),
                 7, "must be an unsigned integer"),
            ]
            for frame, want_id, want_text in cases:
                reply = exchange(frame)
                self.assertIs(reply["ok"], False, frame)
                self.assertEqual(reply["id"], want_id, frame)
                self.assertEqual(reply["error"]["code"], "InvalidArgument", frame)
                self.assertIn(want_text, reply["error"]["message"], frame)
                self.assertIsInstance(tempokv.error_from_code(**reply["error"]), InvalidArgument)
            # Out of order: a request before the hello.
            reply = exchange(msgpack.packb({"v": 1, "id": 8, "op": "heartbeat", "args": {}}))
            self.assertEqual(reply["error"]["code"], "FailedPrecondition")
            hello = exchange(msgpack.packb({"v": 1, "id": 9, "op": "hello",
                                            "args": {"versions": [1], "future_field": 1}}))
            self.assertIs(hello["ok"], True)
            reply = exchange(msgpack.packb({"v": 1, "id": 9, "op": "heartbeat", "args": {}}))
            self.assertEqual(reply["error"]["code"], "FailedPrecondition")  # id not above 9
            reply = exchange(msgpack.packb({"v": 1, "id": 10, "op": "heartbeat",
                                            "args": {"extra": 1}}))
            self.assertEqual(reply["error"]["code"], "InvalidArgument")  # unknown field
            reply = exchange(msgpack.packb({"v": 1, "id": 11, "op": "bye", "args": {}}))
            self.assertIs(reply["ok"], True)
            reply = exchange(msgpack.packb({"v": 1, "id": 12, "op": "heartbeat", "args": {}}))
            self.assertEqual(reply["error"]["code"], "FailedPrecondition")  # session ended
            no_common = exchange(msgpack.packb({"v": 1, "id": 13, "op": "hello",
                                                "args": {"versions": [7]}}))
            self.assertEqual(no_common["error"]["code"], "InvalidArgument")
        finally:
            raw.close(linger=0)
            ctx.term()
        # The well-behaved client kept working throughout.
        c.heartbeat()
        self.assertGreaterEqual(c.stats()["bad_messages_total"], 6)
        objs = self.put_objects(c, [5000])
        self.assertEqual(c.lookup([objs[0][0]]), [5000])

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
        import threading

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
