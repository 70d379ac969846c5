"""TempoKVClient's claims: request_retrieval and the transfer that follows, a ready claim's
objects, and the ready notifications :meth:`poll` delivers to the callbacks.

A part of :class:`tempokv.client.TempoKVClient`, not a class to use alone.
"""

import time

import zmq

from . import errors
from .errors import FailedPrecondition, Internal, NotFound, Unavailable
from .spans import parse_spans
from .wire import error_of, key_pair, u64

_ANSWERS = ("ready", "ordinary_ready", "wait")


class _Claim:
    __slots__ = ("waiting", "ready", "on_ready", "objects", "path", "lost")

    def __init__(self):
        self.waiting = False  # answered wait; its notification has not been delivered
        self.ready = False  # `objects` are valid
        self.on_ready = None
        self.objects = []
        self.path = None  # "staged" | "ordinary" once ready
        self.lost = None  # why a ready claim was taken away (a TempoKVError)


class Claims:
    """Claims, their objects, and notifications."""

    def request_retrieval(self, request_id, on_ready=None):
        """Returns "ready", "ordinary_ready" or "wait".

        With "ready" / "ordinary_ready" the claim's :meth:`objects` are available now. With
        "wait", :meth:`poll` later runs ``on_ready(request_id, path, error)``: ``path`` is
        "staged" or "ordinary" (and :meth:`objects` are available) or None with ``error`` a
        :class:`TempoKVError` saying why the claim failed (the daemon released it).
        """
        request_id = u64("request_id", request_id)
        result = self._call("request_retrieval", {"request_id": request_id})
        answer = result.get("answer")
        if answer not in _ANSWERS:
            raise Internal("Internal", f"tempokvd answered request_retrieval({request_id}) "
                                       f"with {answer!r}")
        claim = _Claim()
        if answer == "wait":
            # A notification already queued for it is delivered by poll(), which finds it waiting.
            claim.waiting = True
            claim.on_ready = on_ready
        else:
            claim.ready = True
            claim.path = "staged" if answer == "ready" else "ordinary"
            self._set_objects(claim, result.get("objects"), result.get("generations"))
        self._claims[request_id] = claim
        return answer

    def begin_transfer(self, request_id):
        self._call("begin_transfer", {"request_id": u64("request_id", request_id)})

    def end_transfer(self, request_id):
        """On success the claim's spans are forgotten: the daemon may reuse them from now on."""
        request_id = u64("request_id", request_id)
        self._call("end_transfer", {"request_id": request_id})
        self._claims.pop(request_id, None)

    def object_transferred(self, request_id, key):
        """One object (``key`` = (model, hash)) of the claim has been copied (progressive
        release)."""
        self._call("object_transferred", {"request_id": u64("request_id", request_id),
                                          "key": key_pair("key", key)})

    def cancel(self, request_id):
        """The claim is forgotten here whatever the daemon answers."""
        request_id = u64("request_id", request_id)
        self._claims.pop(request_id, None)
        self._call("cancel", {"request_id": request_id})

    def objects(self, request_id):
        """A ready claim's objects: [(offset, bytes), ...], one per manifest entry in manifest
        order, in the tier mapping. NotFound for a claim not answered on this client (or already
        ended); FailedPrecondition while it waits for its notification."""
        claim = self._claims.get(request_id)
        if claim is None:
            raise NotFound("NotFound", f"objects: request {request_id} has no claim answered "
                                       "ready on this client")
        if claim.lost is not None:
            raise claim.lost
        if not claim.ready:
            raise FailedPrecondition("FailedPrecondition", f"objects: request {request_id} is "
                                                           "waiting for its ready notification")
        return list(claim.objects)

    def _set_objects(self, claim, objects, generations):
        """A ready claim's spans, each checked against the tier's size. A bad one makes the
        claim lost (``objects`` raises, so the caller cancels it): the daemon still holds it."""
        tier_bytes = len(self._tier) if self._tier is not None else self.hello.get("tier_bytes")
        try:
            claim.objects = parse_spans(objects, tier_bytes, generations) or []
        except errors.TempoKVError as e:
            claim.objects, claim.lost = [], e

    def pending(self):
        """Whether :meth:`poll` has something to deliver now (queued or on the socket)."""
        self._check_fork()
        with self._lock:
            if self._notifications:
                return True
            return self._socket is not None and bool(self._socket.poll(0, zmq.POLLIN))

    def poll(self, timeout_s=0):
        """Receives the messages that arrive within ``timeout_s`` (0: only those already here;
        it returns as soon as one notification is queued), then runs the callbacks of the
        queued notifications. Sends a heartbeat first when none is due. Returns how many
        notifications were delivered."""
        self._check_open("poll")
        if self.reconnect and self._session_lost:
            self._recover()  # the claims lost with the session are delivered below
        self._heartbeat_if_due()
        deadline = time.monotonic() + max(0.0, timeout_s)
        self._drain(0)
        while not self._notifications:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._drain(left)
        delivered = 0
        # Drain before each delivery: a callback's own calls may have queued more.
        while True:
            with self._lock:
                if not self._notifications:
                    break
                n = self._notifications.popleft()
            self._deliver(n)
            delivered += 1
            self._drain(0)
        return delivered

    def wait(self, timeout_s, fds=()):
        """Blocks until the daemon has sent something (a notification or a late reply), a
        notification is already queued, one of ``fds`` (file descriptors) is readable, or
        ``timeout_s`` passes; delivers nothing (:meth:`poll` does). For a thread that waits for
        the daemon and for its own work at once, with no polling interval (the vLLM loader: a
        claim seen ready, or a new load). Returns whether :meth:`poll` has something now."""
        self._check_open("wait")
        self._check_fork()
        with self._lock:
            if self._notifications:
                return True
            poller = zmq.Poller()
            poller.register(self._socket, zmq.POLLIN)
            for fd in fds:
                poller.register(fd, zmq.POLLIN)
            timeout_ms = int(timeout_s * 1000 + 0.999) if timeout_s > 0 else 0
            return self._socket in dict(poller.poll(timeout_ms))

    def wait_ready(self, request_id, timeout_s=None):
        """Polls until a claim answered "wait" is ready (returns its path) or failed (raises its
        error). ``timeout_s`` defaults to the client's timeout; then Unavailable."""
        claim = self._claims.get(request_id)
        if claim is None:
            raise NotFound("NotFound", f"wait_ready: request {request_id} has no claim on this "
                                       "client")
        outcome = []
        user_cb = claim.on_ready

        def capture(rid, path, error):
            outcome.append((path, error))
            if user_cb is not None:
                user_cb(rid, path, error)

        if claim.waiting:
            claim.on_ready = capture
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        while claim.waiting and not outcome:
            left = deadline - time.monotonic()
            if left <= 0:
                claim.on_ready = user_cb
                raise Unavailable("Unavailable", f"request {request_id} was not ready within "
                                                 f"{timeout_s or self.timeout_s} s")
            self.poll(min(left, max(self.heartbeat_timeout_s / 3, 0.05)))
        if outcome and outcome[0][1] is not None:
            raise outcome[0][1]
        return claim.path

    def _deliver(self, n):
        if n.get("event") != "ready":
            return
        request_id = n.get("request_id")
        claim = self._claims.get(request_id)
        if claim is None:
            return  # unknown: ignored
        if not claim.waiting:
            # A ready claim fails only when another session of the runtime cancelled it: stop
            # copying and end_transfer (the daemon keeps the bytes until then).
            if n.get("path") is None and claim.ready:
                claim.ready = False
                claim.objects = []
                claim.lost = error_of(n.get("error"))
            return
        claim.waiting = False
        on_ready = claim.on_ready
        claim.on_ready = None
        path, error = n.get("path"), None
        if "_lost" in n:
            path, error = None, n["_lost"]
            self._claims.pop(request_id, None)
        elif path is not None:
            claim.ready = True
            claim.path = path
            self._set_objects(claim, n.get("objects"), n.get("generations"))
        else:
            error = error_of(n.get("error"))
            self._claims.pop(request_id, None)  # the daemon released the failed claim
        # Last: the callback may call back in and change the claims.
        if on_ready is not None:
            on_ready(request_id, path, error)
