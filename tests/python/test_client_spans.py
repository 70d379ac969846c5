"""A ready claim's spans are checked against the tier before anyone reads one: a daemon (here a
scripted stand-in on a ZeroMQ ROUTER socket) that answers a span outside the tier makes the
claim an error, in a retrieval reply and in a ready notification alike; valid spans, and the
generations a daemon may send beside them, come through."""

import os
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))

import msgpack  # noqa: E402
import zmq  # noqa: E402

from tempokv import Internal, TempoKVClient  # noqa: E402
from tempokv.spans import Span, parse_spans  # noqa: E402

TIER_BYTES = 1 << 16


class FakeDaemon:
    """Answers hello, heartbeat, bye, begin_transfer and cancel; request_retrieval with
    ``answer`` (a result map) and, when ``notify`` is set, a ready notification after it."""

    def __init__(self, answer, notify=None):
        self.dir = tempfile.mkdtemp(prefix="tempokv-fake-")
        self.tier = os.path.join(self.dir, "tier")
        self.write = os.path.join(self.dir, "write")
        for path in (self.tier, self.write):
            with open(path, "wb") as f:
                f.truncate(TIER_BYTES)
        self.endpoint = "ipc://" + os.path.join(self.dir, "sock")
        self.answer, self.notify = answer, notify
        self.ops = []
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.bind(self.endpoint)
        self._stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _result(self, op, args):
        if op == "hello":
            return {"version": 2, "server": "fake", "max_message_bytes": 1 << 20,
                    "max_manifest_entries": 1024, "session": 1, "runtime_id": 1,
                    "heartbeat_timeout_ms": 60000, "tier_path": self.tier,
                    "tier_bytes": TIER_BYTES, "write_path": self.write,
                    "write_bytes": TIER_BYTES, "instance": 42}
        if op == "request_retrieval":
            return self.answer
        return {}

    def _run(self):
        while not self._stop:
            if not self.sock.poll(50):
                continue
            peer, frame = self.sock.recv_multipart()
            msg = msgpack.unpackb(frame, raw=False)
            self.ops.append(msg["op"])
            reply = {"id": msg["id"], "ok": True, "result": self._result(msg["op"], msg["args"])}
            self.sock.send_multipart([peer, msgpack.packb(reply, use_bin_type=True)])
            if msg["op"] == "request_retrieval" and self.notify is not None:
                event = dict({"event": "ready", "request_id": msg["args"]["request_id"]},
                             **self.notify)
                self.sock.send_multipart([peer, msgpack.packb(event, use_bin_type=True)])

    def close(self):
        self._stop = True
        self.thread.join(5)
        self.sock.close()
        self.ctx.term()


BAD_SPANS = {
    "offset 2^64-1, 0 bytes": [[2**64 - 1, 0]],
    "offset 2^64-1": [[2**64 - 1, 4096]],
    "past the end": [[TIER_BYTES - 100, 4096]],
    "empty": [[0, 4096], [4096, 0]],
    "negative": [[-1, 10]],
    "not a pair": [[0]],
}


class SpanTest(unittest.TestCase):
    def client(self, answer, notify=None):
        d = FakeDaemon(answer, notify)
        self.addCleanup(d.close)
        c = TempoKVClient(d.endpoint, name="spans", timeout_s=5, background_heartbeat=False)
        self.addCleanup(c.close)
        return c

    def test_a_ready_reply_with_a_span_outside_the_tier_is_an_error_of_the_claim(self):
        for what, objects in BAD_SPANS.items():
            with self.subTest(what):
                c = self.client({"answer": "ready", "objects": objects})
                self.assertEqual(c.request_retrieval(7), "ready")
                with self.assertRaises(Internal):
                    c.objects(7)

    def test_a_ready_notification_with_a_span_outside_the_tier_is_an_error_of_the_claim(self):
        for what, objects in BAD_SPANS.items():
            with self.subTest(what):
                got = []
                c = self.client({"answer": "wait"},
                                notify={"path": "staged", "objects": objects})
                self.assertEqual(c.request_retrieval(7, on_ready=lambda *a: got.append(a)),
                                 "wait")
                c.wait_ready(7, timeout_s=5)
                with self.assertRaises(Internal):
                    c.objects(7)

    def test_valid_spans_and_their_generations_come_through(self):
        c = self.client({"answer": "ready", "objects": [[0, 4096], [TIER_BYTES - 8, 8]],
                         "generations": [3, 4]})
        self.assertEqual(c.request_retrieval(7), "ready")
        spans = c.objects(7)
        self.assertEqual(spans, [(0, 4096), (TIER_BYTES - 8, 8)])
        self.assertEqual([s.generation for s in spans], [3, 4])
        self.assertEqual(len(c.read_object(*spans[1])), 8)

    def test_spans_without_generations_carry_none_and_mismatched_generations_are_refused(self):
        self.assertEqual([s.generation for s in parse_spans([[0, 1]], 10)], [None])
        self.assertEqual(parse_spans([[9, 1]], 10), [(9, 1)])
        with self.assertRaises(Internal):
            parse_spans([[0, 1], [1, 1]], 10, generations=[1])
        self.assertIsInstance(parse_spans([[0, 1]])[0], Span)


if __name__ == "__main__":
    unittest.main()
