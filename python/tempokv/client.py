"""TempoKVClient: the runtime adapter's calls carried to tempokvd.

The Python twin of the C++ ``ServiceClient`` (include/tempokv/client.h). It
speaks versions 1..4 of the wire protocol (docs/protocol.md): one MessagePack map
per ZeroMQ message on a DEALER socket, requests ``{v, id, op, args}``, replies
``{id, ok, result | error}`` and ``ready`` notifications ``{event, request_id,
path | error, objects}``.

Each call sends one request and blocks until its reply, at most ``timeout_s``
seconds (then :class:`Unavailable`). An error reply raises the
:class:`TempoKVError` subclass named by its code. Ready notifications that
arrive while a call waits are queued, never lost; :meth:`poll` delivers them
to the ``on_ready`` callbacks given to :meth:`request_retrieval` (never from
inside another call).

Shared memory: after the hello the client maps the daemon's fast tier
(``tier_path``) read-only and its write region (``write_path``) read-write.
A ready claim's :meth:`objects` are ``(offset, bytes)`` spans in the tier
mapping, each checked to lie inside it (a claim with one outside raises from
:meth:`objects`: ``spans.py``); :meth:`read_object` returns a zero-copy
``memoryview`` of one, valid (and unchanged) until the claim's ``end_transfer``,
its ``object_transferred`` for that object, or ``cancel``. :meth:`put` stores
new KV through the write region.

Tokens: a ``runtime`` that the daemon's ``server.tokens_file`` lists is joined
only with its ``token`` (docs/service.md, Security model); the hello carries it,
and again after a reconnect.

Heartbeats: the daemon ends a session after ``heartbeat_timeout_ms`` without
any request. Any call counts; a background thread (``background_heartbeat``)
sends a heartbeat when no request went out for a third of that time, and so
does :meth:`poll`.

Recovery (``reconnect``): when the daemon no longer knows the session (it
restarted, or the session timed out), the next call or :meth:`poll` says
hello again, maps the new tier and write region when the daemon is a new
instance (``hello["instance"]``), and fails every claim held here with
:class:`tempokv.errors.ClaimLost` (a waiting claim's ``on_ready`` gets it from
:meth:`poll`; a ready claim's :meth:`objects` raises it); then the call that
found out is made again (``put`` raises Unavailable instead: its reservation
belonged to the old session). Memoryviews of the old tier must not be used
after a recovery (``recoveries`` counts them). A daemon that is down fails
calls fast: a request no connection takes within the call's timeout raises
Unavailable (:meth:`lookup` waits at most ``lookup_timeout_s``), at once
while the background heartbeat finds the daemon down.

Fork safety: a client used in a process forked from the one that made it
(vLLM forks and spawns its workers) notices the new pid on its next call, drops
what it inherited (context, socket, lock, heartbeat thread; never closing the
parent's socket), opens its own socket and says hello as a new session of the
same runtime, and restarts its heartbeat thread (``forks`` counts this). The
parent's claims and write reservations are not the child's. Closing a client
in a forked child that never used it sends nothing.

Threading: NOT thread-safe. One thread makes every call, runs :meth:`poll`
(and so the callbacks) and closes the client. Callbacks may call back into
the client. Use one client per thread (e.g. one per tensor-parallel rank,
sharing a claim through the same ``runtime`` name). The background heartbeat
shares only the socket with that thread, under a lock, and runs no callbacks.

The client's parts, one module each, joined into :class:`TempoKVClient`: ``wire`` (values checked
before they are sent), ``transport`` (the socket), ``session`` (hello, recovery, fork safety),
``heartbeat``, ``shared_memory`` (the mappings and the puts), ``claims`` (retrieval, objects,
notifications) and ``adapter_calls`` (the scheduler's calls and ``step``).
"""

import collections
import os
import threading
import time

from . import errors
from .adapter_calls import AdapterCalls
from .claims import Claims
from .errors import Internal, InvalidArgument
from .heartbeat import Heartbeat
from .session import Session
from .shared_memory import SharedMemory
from .transport import Transport
from .wire import MIN_PROTOCOL_VERSION, PROTOCOL_VERSION, key_pair, u32

__all__ = ["TempoKVClient", "PROTOCOL_VERSION"]


class TempoKVClient(AdapterCalls, Claims, SharedMemory, Session, Heartbeat, Transport):
    """One session with tempokvd (see the module documentation). Not thread-safe."""

    def __init__(self, endpoint, name="", runtime="", max_active=0, timeout_s=10.0,
                 map_shared_memory=True, ranks=0, lookup_timeout_s=0.25,
                 background_heartbeat=True, reconnect=True, token="",
                 token_budget=0, async_loads=False, put_timeout_s=30.0, step_edits=True):
        if not endpoint:
            raise InvalidArgument("InvalidArgument", "endpoint is empty")
        if timeout_s <= 0:
            raise InvalidArgument("InvalidArgument", "timeout_s must be positive")
        if lookup_timeout_s <= 0:
            raise InvalidArgument("InvalidArgument", "lookup_timeout_s must be positive")
        if put_timeout_s <= 0:
            raise InvalidArgument("InvalidArgument", "put_timeout_s must be positive")
        self.endpoint = endpoint
        self.timeout_s = float(timeout_s)
        self.lookup_timeout_s = float(lookup_timeout_s)
        # A put returns once durable: its reply waits for the daemon's write and sync, which a
        # busy disk can hold for seconds, so it gets a timeout of its own (the other calls'
        # short one is for a daemon that is down, which the heartbeat notices anyway).
        self.put_timeout_s = float(put_timeout_s)
        self.reconnect = bool(reconnect)
        self.recoveries = 0  # hellos said again after the daemon lost the session
        self.late_errors = 0  # error replies nobody waited for (a step's, a timed-out call's)
        self.last_late_error = None
        self._step_seq = 0
        # step(): the lists as edits of the last step's (version 4); False: always in full.
        self.step_edits = bool(step_edits)
        self._step_lists = None  # ((late errors, recoveries) then, its seq, (decoders, waiting))
        self._map_shm = bool(map_shared_memory)
        self._lock = threading.RLock()  # the socket and the notification queue
        self._session_lost = False  # the heartbeat thread found the session gone
        self._daemon_down = False  # the heartbeat thread's last heartbeat got no answer
        self._stop = threading.Event()
        self._heartbeat_thread = None
        self._next_id = 1
        self._version = PROTOCOL_VERSION
        self._closed = False  # close() ran: nothing works any more
        self._session_open = False  # the hello succeeded and no bye was sent
        self._claims = {}
        self._notifications = collections.deque()
        self._tier = None
        self._write = None
        self._write_path = None
        self.write_regions_mapped = 0  # how many times a reserve_write named a new region
        self._last_sent = time.monotonic()
        self.hello = {}

        self._pid = os.getpid()  # the process whose context, socket and session these are
        self.forks = 0  # sessions opened again in a forked child
        self._background_heartbeat = bool(background_heartbeat)
        self._context = self._socket = None
        try:
            self._open_socket()
            args = {"versions": list(range(MIN_PROTOCOL_VERSION, PROTOCOL_VERSION + 1)),
                    "client": str(name)}
            if runtime:
                args["runtime"] = str(runtime)
            if max_active:
                args["max_active"] = u32("max_active", max_active)
            if token_budget:
                args["token_budget"] = u32("token_budget", token_budget)
            if async_loads:
                args["async_loads"] = True
            if ranks:
                args["ranks"] = u32("ranks", ranks)
            if token:
                args["token"] = str(token)
            self._hello_args = args
            self.hello = self._say_hello()
            self._version = self.hello["version"]
            self._session_open = True
            if map_shared_memory:
                self._map_shared_memory()
        except BaseException:
            self.close()
            raise
        self._start_heartbeat()

    # ----------------------------------------------------------------------------------------
    # Properties of the session.

    @property
    def session(self):
        return self.hello.get("session")

    @property
    def runtime_id(self):
        return self.hello.get("runtime_id")

    @property
    def heartbeat_timeout_s(self):
        return self.hello.get("heartbeat_timeout_ms", 0) / 1000.0

    @property
    def tier(self):
        """The read-only mmap of the fast tier (None when not mapped)."""
        return self._tier

    @property
    def write_region(self):
        """The read-write mmap of the write region (None when not mapped)."""
        return self._write

    @property
    def closed(self):
        return self._closed

    @property
    def instance(self):
        """The daemon process's id from the hello (changes when the daemon restarts)."""
        return self.hello.get("instance")

    # ----------------------------------------------------------------------------------------
    # Extras: session, store, stats; closing.

    def heartbeat(self):
        self._call("heartbeat", {})

    def bye(self):
        """Ends the session now (its runtime's claims are cancelled when it was the last
        session). The socket stays open until :meth:`close`, but every later call raises
        FailedPrecondition and pending callbacks are dropped."""
        try:
            self._call("bye", {})
        finally:
            self._session_open = False
            self._claims.clear()
            self._notifications.clear()

    def lookup(self, keys, with_claimable=False):
        """Each key's payload bytes in the store (0 when absent), in the order of ``keys``.
        With ``with_claimable``: ``(sizes, claimable)``, where ``claimable`` is how many
        leading keys, all stored, one claim may hold within the daemon's protected budget
        (None from a daemon that does not say)."""
        wire_keys = [key_pair(f"keys[{i}]", k) for i, k in enumerate(keys)]
        result = self._call("lookup", {"keys": wire_keys})
        sizes = result.get("bytes")
        if not isinstance(sizes, list) or len(sizes) != len(wire_keys):
            raise Internal("Internal", f"tempokvd answered a lookup of {len(wire_keys)} keys "
                                       f"with {sizes!r}")
        sizes = [int(s) for s in sizes]
        if not with_claimable:
            return sizes
        claimable = result.get("claimable")
        return sizes, (int(claimable) if isinstance(claimable, int) else None)

    def stats(self):
        """The daemon's counters: {name: value}, the /metrics names without ``tempokv_`` and
        with label values appended by ``_`` (e.g. ``claims_stage_ready``)."""
        result = self._call("stats", {})
        out = {}
        for entry in result.get("stats", []):
            name, value = entry
            out[name] = value
        return out

    def close(self, send_bye=True):
        """Ends the session (a bye with a short timeout, when ``send_bye`` and it is open),
        closes the socket and unmaps the shared files. Idempotent. Memoryviews from
        :meth:`read_object` still alive keep their mapping until they are released."""
        if self._closed:
            return
        if self._pid != os.getpid():  # a fork: the socket and the session are the parent's
            self._closed = True
            self._context = self._socket = None
            self._claims.clear()
            self._notifications.clear()
            self._unmap_shared_memory()
            return
        self._stop.set()
        thread, self._heartbeat_thread = self._heartbeat_thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        if send_bye and self._session_open and self._socket is not None:
            saved = self.timeout_s
            self.timeout_s = min(saved, 1.0)
            try:
                self.bye()
            except errors.TempoKVError:
                pass
            finally:
                self.timeout_s = saved
        self._closed = True
        self._session_open = False
        self._claims.clear()
        self._notifications.clear()
        self._unmap_shared_memory()
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None
        if self._context is not None:
            self._context.term()
            self._context = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close(send_bye=False)
        except Exception:
            pass
