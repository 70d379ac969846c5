"""TempoKVClient's socket: one request out and its reply back, notifications queued on the way.

A part of :class:`tempokv.client.TempoKVClient` (see its module documentation), not a class to
use alone: its methods use the client's state (``_socket``, ``_lock``, ``_notifications``, ...).
"""

import time

import msgpack
import zmq

from .errors import Internal, InvalidArgument, Unavailable
from .wire import error_of, session_gone


class Transport:
    """The ZeroMQ DEALER socket: sending, one exchange, draining notifications."""

    def _open_socket(self):
        self._context = zmq.Context()
        self._socket = self._context.socket(zmq.DEALER)
        self._socket.setsockopt(zmq.LINGER, 0)
        # Queue only on a live connection: a request to a daemon that is down fails.
        self._socket.setsockopt(zmq.IMMEDIATE, 1)
        self._socket.connect(self.endpoint)

    def _send(self, op, message, timeout_s):
        """Hands the message to a live connection, waiting up to timeout_s for one."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self._socket.send(message, zmq.NOBLOCK, copy=True)
                return
            except zmq.Again:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Unavailable("Unavailable", f"{op}: tempokvd at {self.endpoint} is not "
                                                     f"reachable (no connection took the request "
                                                     f"within {timeout_s:g} s)") from None
                self._socket.poll(max(1, int(left * 1000 + 0.999)), zmq.POLLOUT)
            except zmq.ZMQError as e:
                raise Unavailable("Unavailable", f"{op}: sending to tempokvd at "
                                                 f"{self.endpoint}: {e}") from e

    def _exchange(self, op, args, version=None, timeout_s=None, connect_wait=True):
        self._check_fork()
        with self._lock:
            return self._exchange_locked(op, args, version, timeout_s, connect_wait)

    def _exchange_locked(self, op, args, version, timeout_s, connect_wait):
        """Sends one request and waits for its reply; returns its ``result`` map or raises."""
        self._check_open(op)
        if timeout_s is None:
            timeout_s = min(self.lookup_timeout_s, self.timeout_s) if op == "lookup" \
                else self.timeout_s
        request_id = self._next_id
        self._next_id += 1
        message = msgpack.packb({"v": self._version if version is None else version,
                                 "id": request_id, "op": op, "args": args}, use_bin_type=True)
        limit = self.hello.get("max_message_bytes", 0)
        if limit and len(message) > limit:
            raise InvalidArgument("InvalidArgument",
                                  f"{op}: message of {len(message)} bytes exceeds the daemon's "
                                  f"limit of {limit} bytes")
        self._send(op, message, timeout_s if connect_wait and not self._daemon_down else 0)
        self._last_sent = time.monotonic()
        deadline = self._last_sent + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if not self._socket.poll(max(1, int(left * 1000 + 0.999)), zmq.POLLIN):
                continue
            frame = self._socket.recv(zmq.NOBLOCK, copy=True)
            self._daemon_down = False  # it answers
            msg = self._decode(frame)
            if msg is None:
                # With one request in flight this is most likely its reply; failing now beats
                # waiting out the timeout. A late reply that follows is dropped as stale.
                raise Internal("Internal", f"undecodable message from tempokvd at "
                                           f"{self.endpoint} while waiting for {op}")
            if "event" in msg:
                self._notifications.append(msg)
                continue
            if "ok" not in msg:
                continue  # neither reply nor notification: ignored
            reply_id = msg.get("id")
            if msg["ok"] is True:
                if reply_id != request_id:
                    continue  # a late reply to a call that timed out: nobody waits for it
                result = msg.get("result", {})
                return result if isinstance(result, dict) else {}
            # A nil id means the daemon could not read the envelope: the request in flight.
            if reply_id is None or reply_id == request_id:
                raise error_of(msg.get("error"))
            self._note_late_error(msg)
        raise Unavailable("Unavailable", f"tempokvd at {self.endpoint} did not answer {op} "
                                         f"(id {request_id}) within {timeout_s:g} s")

    @staticmethod
    def _decode(frame):
        try:
            msg = msgpack.unpackb(frame, raw=False)
        except Exception:  # msgpack raises several types for malformed input
            return None
        return msg if isinstance(msg, dict) else None

    def _drain(self, timeout_s):
        """Queues the notifications that arrive within timeout_s (stops at the first one after
        waiting); stray replies are dropped."""
        self._check_fork()
        with self._lock:
            self._drain_locked(timeout_s)

    def _drain_locked(self, timeout_s):
        timeout_ms = int(timeout_s * 1000 + 0.999) if timeout_s > 0 else 0
        while self._socket.poll(timeout_ms, zmq.POLLIN):
            msg = self._decode(self._socket.recv(zmq.NOBLOCK, copy=True))
            if msg is not None and msg.get("event") == "ready":
                self._notifications.append(msg)
                timeout_ms = 0
            elif msg is not None and "event" in msg:
                continue  # an event this version does not know: ignored
            else:
                # Late replies and undecodable messages have nobody waiting; errors are counted.
                if msg is not None and msg.get("ok") is False:
                    self._note_late_error(msg)
                timeout_ms = 0

    def _note_late_error(self, msg):
        error = error_of(msg.get("error"))
        self.late_errors += 1
        self.last_late_error = error
        if session_gone(error):
            self._session_lost = True
