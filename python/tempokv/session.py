"""TempoKVClient's session: the hello, a call that recovers a lost session, and the new session
of a client used in a forked child (see the module documentation of :mod:`tempokv.client`,
Recovery and Fork safety).

A part of :class:`tempokv.client.TempoKVClient`, not a class to use alone.
"""

import os
import threading

from . import errors
from .errors import ClaimLost, FailedPrecondition, Unavailable
from .wire import MIN_PROTOCOL_VERSION, PROTOCOL_VERSION, session_gone


class Session:
    """Hello, recovery and fork safety."""

    def _check_open(self, op):
        self._check_fork()
        if self._closed:
            raise FailedPrecondition("FailedPrecondition", f"{op}: the client is closed")
        if not self._session_open and op != "hello":
            raise FailedPrecondition("FailedPrecondition",
                                     f"{op}: the session has ended (bye was sent)")

    def _check_fork(self):
        """Fork safety: a client used in a process forked from the one that made it (vLLM forks
        its workers) gets a context, a socket and a session of its own before anything else."""
        if self._pid != os.getpid():
            self._after_fork()

    def _after_fork(self):
        """This process is a fork: the context, socket, lock and heartbeat thread it inherited
        are the parent's (the thread does not run here; the lock may be held forever by a
        thread that does not exist here). They are dropped, never closed here (pyzmq leaves a
        parent's socket alone in a child), and the client says hello as a new session: of
        the same runtime when it named one. Claims, notifications and write reservations
        were the parent's session's: forgotten. The shared mappings are inherited and kept,
        unless the daemon is another instance now."""
        self._pid = os.getpid()
        self.forks += 1
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._heartbeat_thread = None
        self._context = self._socket = None
        self._claims.clear()
        self._notifications.clear()
        self._next_id = 1
        self._step_seq = 0
        self._step_lists = None
        self._session_open = self._session_lost = self._daemon_down = False
        if self._closed:
            return
        self._open_socket()
        try:
            hello = self._say_hello()
        except errors.TempoKVError:
            # As a lost session: the next call (or poll) says hello again, when reconnecting.
            self._session_open = self._session_lost = True
            self._start_heartbeat()
            raise
        if self._map_shm and any(hello.get(k) != self.hello.get(k)
                                 for k in ("instance", "tier_path", "write_path")):
            self._unmap_shared_memory()
            self.hello = hello
            self._map_shared_memory()
        self.hello = hello
        self._version = hello["version"]
        self._session_open = True
        self._start_heartbeat()

    def _say_hello(self):
        """The hello (always written in version 1: its envelope is frozen); checks the version."""
        result = self._exchange("hello", self._hello_args, version=1)
        version = result.get("version")
        if not isinstance(version, int) or not MIN_PROTOCOL_VERSION <= version <= PROTOCOL_VERSION:
            raise FailedPrecondition(
                "FailedPrecondition",
                f"tempokvd at {self.endpoint} picked protocol version {version}, "
                f"this client speaks {MIN_PROTOCOL_VERSION}..{PROTOCOL_VERSION}")
        return result

    def _recover(self):
        """The daemon lost the session: hello again, remap when it is a new instance, and fail
        every claim held here with ClaimLost."""
        with self._lock:
            self._session_lost = False
            try:
                hello = self._say_hello()
            except errors.TempoKVError as e:
                self._session_lost = True  # the next call tries again
                raise errors.error_from_code(
                    e.code, f"tempokvd at {self.endpoint} lost this client's session and a new "
                            f"hello failed: {e.message}") from e
            restarted = any(hello.get(k) != self.hello.get(k)
                            for k in ("instance", "tier_path", "write_path"))
            self.hello = hello
            self._version = hello["version"]
            self.recoveries += 1
            if restarted and self._map_shm:
                self._unmap_shared_memory()
                self._map_shared_memory()
            why = ("restarted" if restarted else "ended this client's session")
            for request_id, claim in self._claims.items():
                lost = ClaimLost("Unavailable", f"claim of request {request_id} lost: tempokvd "
                                                f"{why}; the daemon no longer knows it")
                if claim.waiting:
                    self._notifications.append({"event": "ready", "request_id": request_id,
                                                "_lost": lost})
                else:
                    claim.ready = False
                    claim.objects = []
                    claim.lost = lost

    def _call(self, op, args, timeout_s=None):
        """One call, recovering a lost session first, or when the reply says it is lost (then
        asking again). Returns the reply's ``result`` map or raises."""
        self._check_open(op)
        may_recover = self.reconnect and op != "bye"
        if may_recover and self._session_lost:
            self._recover()
        try:
            return self._exchange(op, args, timeout_s=timeout_s)
        except FailedPrecondition as e:
            if not (may_recover and session_gone(e)):
                raise
        self._recover()
        if op in ("put", "abort_write"):
            raise Unavailable("Unavailable", f"{op}: tempokvd lost this client's session and its "
                                             "write reservations; a new session is open, "
                                             "reserve again")
        return self._exchange(op, args, timeout_s=timeout_s)
