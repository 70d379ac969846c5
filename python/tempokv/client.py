"""TempoKVClient: the runtime adapter's calls carried to tempokvd.

The Python twin of the C++ ``ServiceClient`` (include/tempokv/client.h). It
speaks versions 1..2 of the wire protocol (docs/protocol.md): one MessagePack map
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
"""

import collections
import mmap
import os
import threading
import time
import weakref

import msgpack
import zmq

from . import errors
from .errors import (ClaimLost, FailedPrecondition, Internal, InvalidArgument, NotFound,
                     Unavailable)
from .spans import parse_spans

__all__ = ["TempoKVClient", "PROTOCOL_VERSION"]

PROTOCOL_VERSION = 3  # the newest version this client speaks
MIN_PROTOCOL_VERSION = 1  # the oldest: it speaks 1..3 (step needs 2, puts 3)

_U32_MAX = (1 << 32) - 1
_U64_MAX = (1 << 64) - 1
_I64_MAX = (1 << 63) - 1

_ANSWERS = ("ready", "ordinary_ready", "wait")


def _uint(name, value, limit):
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument("InvalidArgument", f"{name} must be an int, got {type(value).__name__}")
    if value < 0 or value > limit:
        raise InvalidArgument("InvalidArgument", f"{name} is {value}, outside 0..{limit}")
    return value


def _u32(name, value):
    return _uint(name, value, _U32_MAX)


def _checksum_pair(digest):
    """An XXH3-128 as an int (``xxhash.xxh3_128_intdigest``) to the wire's [low64, high64]."""
    digest = int(digest)
    if not 0 <= digest < 1 << 128:
        raise InvalidArgument("InvalidArgument", f"checksum {digest} is not a 128-bit value")
    return [digest & 0xFFFFFFFFFFFFFFFF, digest >> 64]


def _xxh3_128(view):
    """The wire's [low64, high64] of the XXH3-128 of a bytes-like payload."""
    import xxhash  # only writers need it (PyPI xxhash; Debian python3-xxhash)
    return _checksum_pair(xxhash.xxh3_128_intdigest(view))


def _u64(name, value):
    return _uint(name, value, _U64_MAX)


def _key(name, key):
    try:
        model, hash_ = key
    except (TypeError, ValueError):
        raise InvalidArgument("InvalidArgument", f"{name} must be a (model, hash) pair") from None
    return [_u64(name + ".model", model), _u64(name + ".hash", hash_)]


def _ids(name, ids):
    return [_u64(f"{name}[{i}]", x) for i, x in enumerate(ids)]


def _error_of(obj):
    """The TempoKVError of an error map ``{code, message}`` (tolerating a malformed one)."""
    if isinstance(obj, dict):
        return errors.error_from_code(obj.get("code", "Unknown"), obj.get("message", ""))
    return Internal("Internal", f"malformed error from tempokvd: {obj!r}")


def _session_gone(error):
    """Whether an error reply says the daemon has no session for this client (docs/protocol.md,
    Errors for bad messages)."""
    return isinstance(error, FailedPrecondition) and "has not said hello" in error.message


class _Claim:
    __slots__ = ("waiting", "ready", "on_ready", "objects", "path", "lost")

    def __init__(self):
        self.waiting = False  # answered wait; its notification has not been delivered
        self.ready = False  # `objects` are valid
        self.on_ready = None
        self.objects = []
        self.path = None  # "staged" | "ordinary" once ready
        self.lost = None  # why a ready claim was taken away (a TempoKVError)


class TempoKVClient:
    """One session with tempokvd (see the module documentation). Not thread-safe."""

    def __init__(self, endpoint, name="", runtime="", max_active=0, timeout_s=10.0,
                 map_shared_memory=True, ranks=0, lookup_timeout_s=0.25,
                 background_heartbeat=True, reconnect=True, token="",
                 token_budget=0, async_loads=False, put_timeout_s=30.0):
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
                args["max_active"] = _u32("max_active", max_active)
            if token_budget:
                args["token_budget"] = _u32("token_budget", token_budget)
            if async_loads:
                args["async_loads"] = True
            if ranks:
                args["ranks"] = _u32("ranks", ranks)
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

    def _open_socket(self):
        self._context = zmq.Context()
        self._socket = self._context.socket(zmq.DEALER)
        self._socket.setsockopt(zmq.LINGER, 0)
        # Queue only on a live connection: a request to a daemon that is down fails.
        self._socket.setsockopt(zmq.IMMEDIATE, 1)
        self._socket.connect(self.endpoint)

    def _start_heartbeat(self):
        if self._background_heartbeat:
            self._heartbeat_thread = threading.Thread(
                target=TempoKVClient._heartbeat_main, args=(weakref.ref(self), self._stop),
                name="tempokv-heartbeat", daemon=True)
            self._heartbeat_thread.start()

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
    # The adapter's calls.

    def add_request(self, request_id, prompt_tokens, cached_tokens, cached_bytes,
                    max_output_tokens):
        self._call("add_request", {
            "request_id": _u64("request_id", request_id),
            "prompt_tokens": _u32("prompt_tokens", prompt_tokens),
            "cached_tokens": _u32("cached_tokens", cached_tokens),
            "cached_bytes": _u64("cached_bytes", cached_bytes),
            "max_output_tokens": _u32("max_output_tokens", max_output_tokens),
        })

    def report_hit(self, request_id, manifest):
        """``manifest``: [(model, hash, bytes), ...] in retrieval order."""
        entries = []
        for i, entry in enumerate(manifest):
            try:
                model, hash_, nbytes = entry
            except (TypeError, ValueError):
                raise InvalidArgument(
                    "InvalidArgument", f"manifest[{i}] must be (model, hash, bytes)") from None
            entries.append([_u64(f"manifest[{i}].model", model),
                            _u64(f"manifest[{i}].hash", hash_),
                            _u64(f"manifest[{i}].bytes", nbytes)])
        self._call("report_hit", {"request_id": _u64("request_id", request_id),
                                  "manifest": entries})

    def update_order(self, waiting, boundary_in_ns=0):
        """``waiting``: request ids, first to be scheduled first; ``boundary_in_ns``: time until
        the running iteration ends (negative means 0, as for the adapter)."""
        boundary = max(0, int(boundary_in_ns))
        self._call("update_order", {"waiting": _ids("waiting", waiting),
                                    "boundary_in_ns": _uint("boundary_in_ns", boundary, _I64_MAX)})

    def iteration_started(self, prefills, decoders):
        self._call("iteration_started", {"prefills": _ids("prefills", prefills),
                                         "decoders": _ids("decoders", decoders)})

    def admitted(self, request_id):
        self._call("admitted", {"request_id": _u64("request_id", request_id)})

    def prefill_done(self, request_id):
        self._call("prefill_done", {"request_id": _u64("request_id", request_id)})

    def tokens_generated(self, request_id, total_generated):
        self._call("tokens_generated", {"request_id": _u64("request_id", request_id),
                                        "total_generated": _u32("total_generated",
                                                                total_generated)})

    def finished(self, request_id, output_tokens):
        self._call("finished", {"request_id": _u64("request_id", request_id),
                                "output_tokens": _u32("output_tokens", output_tokens)})

    def request_retrieval(self, request_id, on_ready=None):
        """Returns "ready", "ordinary_ready" or "wait".

        With "ready" / "ordinary_ready" the claim's :meth:`objects` are available now. With
        "wait", :meth:`poll` later runs ``on_ready(request_id, path, error)``: ``path`` is
        "staged" or "ordinary" (and :meth:`objects` are available) or None with ``error`` a
        :class:`TempoKVError` saying why the claim failed (the daemon released it).
        """
        request_id = _u64("request_id", request_id)
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
        self._call("begin_transfer", {"request_id": _u64("request_id", request_id)})

    def end_transfer(self, request_id):
        """On success the claim's spans are forgotten: the daemon may reuse them from now on."""
        request_id = _u64("request_id", request_id)
        self._call("end_transfer", {"request_id": request_id})
        self._claims.pop(request_id, None)

    def object_transferred(self, request_id, key):
        """One object (``key`` = (model, hash)) of the claim has been copied (progressive
        release)."""
        self._call("object_transferred", {"request_id": _u64("request_id", request_id),
                                          "key": _key("key", key)})

    def cancel(self, request_id):
        """The claim is forgotten here whatever the daemon answers."""
        request_id = _u64("request_id", request_id)
        self._claims.pop(request_id, None)
        self._call("cancel", {"request_id": request_id})

    def step(self, prefills=(), decoders=(), finished=(), queued=(), waiting=(),
             boundary_in_ns=0, admitted=(), measured=None):
        """Protocol v2: one message per scheduler iteration, in place of add_request, admitted,
        iteration_started, prefill_done, tokens_generated, finished and update_order
        (docs/protocol.md, "step"). Sent without waiting for the daemon; an error it is answered
        with is counted in ``late_errors`` (``last_late_error``) when a later call or poll reads
        it.

        ``prefills``: [(request_id, tokens)] prefilling in the iteration starting now (a chunk
        of a chunked prefill lists the request again); ``decoders``: request ids decoding one
        token in it; ``finished``: [(request_id, output_tokens)] ended since the last step;
        ``queued``: [(request_id, prompt_tokens, cached_tokens, cached_bytes,
        max_output_tokens)] that joined the waiting queue; ``waiting``: the waiting order after
        this schedule; ``boundary_in_ns``: time until the iteration starting now ends;
        ``admitted``: request ids scheduled without computing in this iteration (their KV
        loads); ``measured``: [(seq, duration_ns)], the runtime's measured durations of the
        iterations earlier steps started (by the ``seq`` :meth:`step` returned), or None when
        the runtime does not measure them (the daemon then times the steps' arrivals).
        Returns this step's ``seq``.
        """
        if self._version < 2:
            raise FailedPrecondition("FailedPrecondition",
                                     f"step: tempokvd at {self.endpoint} speaks protocol version "
                                     f"{self._version}; step needs 2")

        def rows(name, values, width):
            out = []
            for i, row in enumerate(values):
                try:
                    row = list(row)
                except TypeError:
                    row = None
                if row is None or len(row) != width:
                    raise InvalidArgument("InvalidArgument",
                                          f"step: {name}[{i}] must have {width} integers")
                out.append([_u64(f"{name}[{i}][0]", row[0])] +
                           [(_u64 if (name == "queued" and j == 3) else _u32)(
                               f"{name}[{i}][{j}]", row[j]) for j in range(1, width)])
            return out

        args = {
            "seq": self._step_seq + 1,
            "queued": rows("queued", queued, 5),
            "finished": rows("finished", finished, 2),
            "prefills": rows("prefills", prefills, 2),
            "decoders": _ids("decoders", decoders),
            "waiting": _ids("waiting", waiting),
            "boundary_in_ns": _uint("boundary_in_ns", max(0, int(boundary_in_ns)), _I64_MAX),
            "admitted": _ids("admitted", admitted),
        }
        if measured is not None:
            args["measured"] = [[_u64(f"measured[{i}][0]", m[0]),
                                 _uint(f"measured[{i}][1]", max(0, int(m[1])), _I64_MAX)]
                                for i, m in enumerate(measured)]
        self._check_open("step")
        if self.reconnect and self._session_lost:
            self._recover()
        with self._lock:
            request_id = self._next_id
            self._next_id += 1
            message = msgpack.packb({"v": self._version, "id": request_id, "op": "step",
                                     "args": args}, use_bin_type=True)
            self._send("step", message, 0)
            self._last_sent = time.monotonic()
            self._step_seq += 1
            return self._step_seq

    # ----------------------------------------------------------------------------------------
    # Extras: session, store, stats.

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
        wire_keys = [_key(f"keys[{i}]", k) for i, k in enumerate(keys)]
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

    def put(self, key, first_token, end_token, payload):
        """Stores ``payload`` (bytes-like) under ``key`` = (model, hash) for tokens
        [first_token, end_token): reserve_write, copy into the write region, put. Returns once
        the daemon says the object is durable. ResourceExhausted when the write region is full
        now (retry after outstanding puts complete)."""
        wire_key = _key("key", key)
        first_token = _u32("first_token", first_token)
        end_token = _u32("end_token", end_token)
        if end_token < first_token:
            raise InvalidArgument("InvalidArgument",
                                  f"put: end_token {end_token} is below first_token {first_token}")
        view = memoryview(payload).cast("B")
        nbytes = view.nbytes
        if nbytes == 0:
            raise InvalidArgument("InvalidArgument", "put: empty payload")
        if not self._map_shm:
            raise FailedPrecondition("FailedPrecondition",
                                     "put: this client maps no shared memory (map_shared_memory)")
        # Hashed from the caller's bytes: the daemon stores them only if the region holds them.
        checksum = _xxh3_128(view)
        offset = self._reserve(nbytes)
        try:
            self._write[offset:offset + nbytes] = view
        except BaseException:
            try:
                if isinstance(offset, int) and offset >= 0:
                    self._call("abort_write", {"offset": offset})
            except errors.TempoKVError:
                pass  # the session's end frees its reservations anyway
            raise
        # The daemon frees the reservation whatever the put's outcome: no abort_write after it.
        self._call("put", {"key": wire_key, "first_token": first_token, "end_token": end_token,
                           "offset": offset, "bytes": nbytes, "checksum": checksum},
                   self.put_timeout_s)

    def reserve_write(self, nbytes):
        """Reserves ``nbytes`` in the write region; returns the offset. For callers that fill the
        region themselves (e.g. straight from a tensor) and then :meth:`put_reserved`."""
        return self._reserve(_u64("bytes", nbytes))

    def _reserve(self, nbytes):
        """reserve_write: the offset, with the runtime's write region (which the reply names)
        mapped as :attr:`write_region`."""
        result = self._call("reserve_write", {"bytes": nbytes})
        offset = result.get("offset")
        try:
            path, size = result.get("write_path"), result.get("write_bytes")
            if not isinstance(path, str) or not path or not isinstance(size, int):
                raise Internal("Internal", "tempokvd answered reserve_write without its write "
                                           f"region ({result!r})")
            if self._write is None or self._write_path != path:
                self._unmap("_write")
                self._write = self._map(path, size, True, "the write region")
                self._write_path = path
                self.write_regions_mapped += 1
            if not isinstance(offset, int) or offset < 0 or offset + nbytes > len(self._write):
                raise Internal("Internal", f"tempokvd reserved {nbytes} bytes at offset "
                                           f"{offset!r}, outside the write region of "
                                           f"{len(self._write)} bytes")
        except BaseException:
            if isinstance(offset, int) and offset >= 0:
                try:
                    self._call("abort_write", {"offset": offset})
                except errors.TempoKVError:
                    pass
            raise
        return offset

    def put_reserved(self, key, first_token, end_token, offset, nbytes, checksum=None):
        """``put`` of a payload already written at ``offset`` (from :meth:`reserve_write`).
        ``checksum``: the payload's XXH3-128 as an int (``xxhash.xxh3_128_intdigest`` of the
        bytes the caller meant to put); None hashes what the region holds now. Returns once
        durable; the reservation is freed whatever the outcome."""
        nbytes = _u64("bytes", nbytes)
        offset = _u64("offset", offset)
        if checksum is None:
            if self._write is None or offset + nbytes > len(self._write):
                raise InvalidArgument("InvalidArgument", f"put_reserved: [{offset}, "
                                      f"{offset + nbytes}) is outside the mapped write region")
            checksum = _xxh3_128(memoryview(self._write)[offset:offset + nbytes])
        else:
            checksum = _checksum_pair(checksum)
        self._call("put", {"key": _key("key", key), "first_token": _u32("first_token", first_token),
                           "end_token": _u32("end_token", end_token),
                           "offset": offset, "bytes": nbytes, "checksum": checksum},
                   self.put_timeout_s)

    def abort_write(self, offset):
        self._call("abort_write", {"offset": _u64("offset", offset)})

    def stats(self):
        """The daemon's counters: {name: value}, the /metrics names without ``tempokv_`` and
        with label values appended by ``_`` (e.g. ``claims_stage_ready``)."""
        result = self._call("stats", {})
        out = {}
        for entry in result.get("stats", []):
            name, value = entry
            out[name] = value
        return out

    # ----------------------------------------------------------------------------------------
    # Claims' objects and the tier mapping.

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

    def read_object(self, offset, nbytes):
        """A read-only, zero-copy memoryview of ``nbytes`` at ``offset`` in the tier mapping.
        Release it (or let it go) before :meth:`close` unmaps the tier."""
        if self._tier is None:
            raise FailedPrecondition("FailedPrecondition", "read_object: the tier is not mapped")
        if offset < 0 or nbytes < 0 or offset + nbytes > len(self._tier):
            raise InvalidArgument("InvalidArgument",
                                  f"read_object: [{offset}, {offset}+{nbytes}) is outside the "
                                  f"tier of {len(self._tier)} bytes")
        return memoryview(self._tier)[offset:offset + nbytes]

    def _set_objects(self, claim, objects, generations):
        """A ready claim's spans, each checked against the tier's size. A bad one makes the
        claim lost (``objects`` raises, so the caller cancels it): the daemon still holds it."""
        tier_bytes = len(self._tier) if self._tier is not None else self.hello.get("tier_bytes")
        try:
            claim.objects = parse_spans(objects, tier_bytes, generations) or []
        except errors.TempoKVError as e:
            claim.objects, claim.lost = [], e

    # ----------------------------------------------------------------------------------------
    # Notifications.

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

    # ----------------------------------------------------------------------------------------
    # Closing.

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

    # ----------------------------------------------------------------------------------------
    # Internals.

    def _check_open(self, op):
        self._check_fork()
        if self._closed:
            raise FailedPrecondition("FailedPrecondition", f"{op}: the client is closed")
        if not self._session_open and op != "hello":
            raise FailedPrecondition("FailedPrecondition",
                                     f"{op}: the session has ended (bye was sent)")

    def _map_shared_memory(self):
        self._tier = self._map(self.hello.get("tier_path", ""), self.hello.get("tier_bytes", 0),
                               False, "the fast tier")
        # The write region is the runtime's own, named by the first reserve_write (_reserve).

    def _unmap_shared_memory(self):
        for attr in ("_tier", "_write"):
            self._unmap(attr)
        self._write_path = None

    def _unmap(self, attr):
        m = getattr(self, attr)
        setattr(self, attr, None)
        if m is not None:
            try:
                m.close()
            except BufferError:
                pass  # exported memoryviews keep it; it is unmapped when they go

    @staticmethod
    def _map(path, nbytes, writable, what):
        if not nbytes:
            return None
        try:
            fd = os.open(path, (os.O_RDWR if writable else os.O_RDONLY) | os.O_CLOEXEC)
        except OSError as e:
            raise errors.error_from_code("IOError", f"mapping {what}: open {path}: {e}") from e
        try:
            size = os.fstat(fd).st_size
            if size < nbytes:
                # Mapping past the end would turn a short file into SIGBUS on first touch.
                raise FailedPrecondition("FailedPrecondition",
                                         f"mapping {what}: {path} is {size} bytes, the daemon "
                                         f"announced {nbytes}")
            access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
            return mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED, access=access)
        except OSError as e:
            raise errors.error_from_code("IOError", f"mapping {what}: mmap {path}: {e}") from e
        finally:
            os.close(fd)  # the mapping keeps the file referenced

    def _heartbeat_if_due(self):
        interval = self.heartbeat_timeout_s / 3
        if interval > 0 and time.monotonic() - self._last_sent >= interval:
            self.heartbeat()

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
            if not (may_recover and _session_gone(e)):
                raise
        self._recover()
        if op in ("put", "abort_write"):
            raise Unavailable("Unavailable", f"{op}: tempokvd lost this client's session and its "
                                             "write reservations; a new session is open, "
                                             "reserve again")
        return self._exchange(op, args, timeout_s=timeout_s)

    @staticmethod
    def _heartbeat_main(ref, stop):
        """The background heartbeat: keeps an idle session alive and notices a daemon that is
        down or lost the session. Never runs callbacks. Holds the client only weakly, so a client
        nobody references is still collected (and its session ends)."""
        while True:
            client = ref()
            if client is None:
                return
            interval = client.heartbeat_timeout_s / 3
            with client._lock:
                wait_s = 1.0 if interval <= 0 else client._last_sent + interval - time.monotonic()
            del client
            if stop.wait(max(0.01, wait_s)):
                return
            client = ref()
            if client is None:
                return
            client._heartbeat_if_idle()
            del client

    def _heartbeat_if_idle(self):
        interval = self.heartbeat_timeout_s / 3
        if interval <= 0:  # a daemon without a heartbeat timeout needs none
            return
        with self._lock:
            if self._closed or not self._session_open or \
                    time.monotonic() - self._last_sent < interval:
                return
            try:
                self._exchange("heartbeat", {}, timeout_s=min(interval, 1.0), connect_wait=False)
                self._daemon_down = False
            except FailedPrecondition as e:
                if _session_gone(e):
                    self._daemon_down = False
                    self._session_lost = True
            except Unavailable:
                self._daemon_down = True
            except errors.TempoKVError:
                pass
            finally:
                self._last_sent = time.monotonic()

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
                raise _error_of(msg.get("error"))
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
        error = _error_of(msg.get("error"))
        self.late_errors += 1
        self.last_late_error = error
        if _session_gone(error):
            self._session_lost = True

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
                claim.lost = _error_of(n.get("error"))
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
            error = _error_of(n.get("error"))
            self._claims.pop(request_id, None)  # the daemon released the failed claim
        # Last: the callback may call back in and change the claims.
        if on_ready is not None:
            on_ready(request_id, path, error)
