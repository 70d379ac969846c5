"""TempoKVClient against a real tempokvd: the hello and the mappings, the calls of a claim's
lifecycle, and the errors they answer (docs/protocol.md)."""

import mmap
import unittest

import tempokvd_fixture as fx

fx.require_daemon()

import msgpack  # noqa: E402
import zmq  # noqa: E402

import tempokv  # noqa: E402
from client_case import MODEL, ClientCase, live_claims  # noqa: E402
from tempokv import FailedPrecondition, InvalidArgument, NotFound, TempoKVError  # noqa: E402

HELLO_FIELDS = {
    "version": int, "server": str, "max_message_bytes": int, "max_manifest_entries": int,
    "session": int, "runtime_id": int, "heartbeat_timeout_ms": int, "tier_path": str,
    "tier_bytes": int, "write_path": str, "write_bytes": int,
}


class ClientTest(ClientCase):

    def test_hello_result_and_mappings(self):
        c = self.client(name="hello-test")
        for field, typ in HELLO_FIELDS.items():
            self.assertIn(field, c.hello)
            self.assertIsInstance(c.hello[field], typ, field)
        self.assertEqual(c.hello["version"], 4)
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



if __name__ == "__main__":
    unittest.main()
