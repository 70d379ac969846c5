"""The scheduler side's link to tempokvd: a background thread that owns one TempoKVClient.

vLLM's engine thread never waits on the daemon: it posts events (a request queued, a step's
snapshot, a request finished or preempted) and reads lookup results the thread has published.
Events are handled in order, so a request's claim is reported before its first step snapshot.

A definite miss needs no round trip: the daemon's filter of stored keys (``tempokv.key_filter``,
named in the hello) is mapped read-only here, re-mapped when another daemon instance answers,
and dropped with the client; ``absent(keys)`` asks it on the engine thread.

When the daemon is unreachable, calls fail after ``timeout_s``; the thread then answers every
lookup with "no hit" at once (vLLM computes) and tries to reconnect every ``retry_s``. Claims
of a daemon that went away are gone with it; the worker's retrieval then fails and vLLM
recomputes (never uses unloaded blocks).
"""

import collections
import logging
import queue
import threading
import time

from ..client import TempoKVClient
from ..errors import TempoKVError
from ..key_filter import KeyFilter
from .reporter import StepReporter

__all__ = ["SchedulerAgent", "Lookup"]

log = logging.getLogger("tempokv.vllm")

IDLE_FLUSH_S = 2.0  # requests finished (or queued) wait this long for a step to carry them


class Lookup:
    """A queued request's lookup: ``hit_chunks`` leading chunks are in the store (every rank's
    object of each) and claimed; ``object_bytes`` are the claimed objects' sizes."""
    __slots__ = ("ready", "hit_chunks", "object_bytes", "claimed", "posted")

    def __init__(self):
        self.posted = time.monotonic()
        self.ready = threading.Event()  # set once published: the engine thread may wait on it
        self.hit_chunks = 0
        self.object_bytes = []
        self.claimed = False  # add_request + report_hit succeeded

    @property
    def done(self):
        return self.ready.is_set()


class SchedulerAgent:
    def __init__(self, endpoint, runtime, max_active, timeout_s=2.0, retry_s=1.0,
                 max_queue=100000, token="", token_budget=0, async_loads=False, ranks=0):
        self.endpoint, self.runtime, self.max_active = endpoint, runtime, max_active
        self.token_budget = token_budget  # tokens per step (chunked prefill), 0: whole prefills
        self.async_loads = async_loads  # a request whose KV loads holds no slot (vLLM's loads)
        # The workers that copy each claim, when this hello creates the runtime (0: whoever
        # asks): with several ranks a claim ends only when every rank has copied its objects.
        self.ranks = ranks
        self.token = token
        self.timeout_s, self.retry_s = timeout_s, retry_s
        self._q = queue.Queue(max_queue)
        # Lookups of queued requests, handled before any other event: a request waits for its
        # lookup before vLLM can schedule it, a snapshot or a finish waits for nobody.
        self._new = collections.deque()
        self.lookup_s = collections.deque(maxlen=4096)  # each lookup: queued -> published
        self._lock = threading.Lock()
        self._lookups = {}
        self._client = None
        self._reporter = None
        self._known = set()  # rids added to the daemon in this session
        self._down_until = 0.0
        self.errors = 0  # calls and steps that failed (observability)
        self._late_seen = 0  # the client's late errors already counted in errors
        self._last_event = time.monotonic()
        self.dropped_steps = 0
        self.trimmed_claims = 0  # hits cut to the prefix that fits the protected budget
        # The daemon instance the last call reached (None before one did): a restarted daemon,
        # or another one on the endpoint, may serve another store (read by the engine thread).
        self.daemon_instance = None
        # The daemon's filter of stored keys (None: none offered or mapped): replaced, never
        # closed, by the agent thread, so the engine thread may go on reading the one it took.
        self.key_filter = None
        self._thread = threading.Thread(target=self._run, name="tempokv-agent", daemon=True)
        self._thread.start()

    # -- engine thread ----------------------------------------------------------------------
    def new_request(self, rid, keys, prompt_tokens, max_output_tokens, chunk_tokens, ranks=1):
        """``keys``: the objects of the chunks that could be loaded (whole chunks before the
        prompt's last token), chunk by chunk, ``ranks`` objects (one per rank) each."""
        if ranks < 1 or len(keys) % ranks:
            raise ValueError(f"{len(keys)} keys are not whole chunks of {ranks} ranks")
        lk = Lookup()
        if not keys:  # nothing to look up (a short prompt, or vLLM holds it all): no wait
            lk.ready.set()
        with self._lock:
            self._lookups[rid] = lk
        self._new.append(("new", rid, keys, prompt_tokens, max_output_tokens, chunk_tokens,
                          ranks))
        self._q.put(("wake",))

    def absent(self, keys):
        """Whether the daemon's key filter says one of ``keys`` is not stored now (a definite
        miss, answered without a round trip). False without a filter usable for the daemon
        instance last reached."""
        f = self.key_filter
        if f is None or not f.usable(self.daemon_instance):
            return False
        return not all(f.may_hold(k) for k in keys)

    def lookup(self, rid):
        with self._lock:
            return self._lookups.get(rid)

    def step(self, snapshot):
        try:
            self._q.put_nowait(("step", snapshot))
        except queue.Full:
            self.dropped_steps += 1  # a snapshot is advisory; the next one supersedes it

    def finished(self, rid, output_tokens):
        with self._lock:
            self._lookups.pop(rid, None)
        self._q.put(("finished", rid, output_tokens))

    def preempted(self, rid):
        """The request under this id ends for the daemon (vLLM preempted it: its blocks are
        gone; the connector queues it again under a new id); its claim, if not released, is
        cancelled. Later lookups of ``rid`` answer None."""
        with self._lock:
            self._lookups.pop(rid, None)
        self._q.put(("preempted", rid))

    def flush(self, timeout_s=10.0, send_pending=True):
        """Waits until every event posted so far is handled and, with ``send_pending``, what the
        step reporter holds for the next step (requests queued or finished) is sent (tests,
        shutdown)."""
        done = threading.Event()
        self._q.put(("flush", done, send_pending))
        return done.wait(timeout_s)

    def close(self):
        self._q.put(("stop",))
        self._thread.join(timeout=5)

    # -- agent thread -------------------------------------------------------------------------
    def _next(self):
        """The next event: a queued request's lookup first."""
        try:
            return self._new.popleft()
        except IndexError:
            pass
        ev = self._q.get(timeout=0.5)
        if ev[0] == "wake":
            try:
                return self._new.popleft()
            except IndexError:
                return ev  # its lookup was handled already
        return ev

    def _run(self):
        while True:
            try:
                ev = self._next()
            except queue.Empty:
                self._idle()
                self._note_instance()
                continue
            self._last_event = time.monotonic()
            kind = ev[0]
            if kind == "wake":
                continue
            if kind == "stop":
                break
            if kind == "flush":
                if ev[2]:
                    self._flush_reporter()
                self._sync()
                self._note_instance()
                ev[1].set()
                continue
            try:
                getattr(self, "_on_" + kind)(*ev[1:])
                self._count_late_errors()
                self._note_instance()
            except TempoKVError as e:
                self.errors += 1
                log.warning("tempokv: %s failed: %s", kind, e)
                if e.code in ("Unavailable", "FailedPrecondition"):
                    self._drop_client()
            except Exception:  # never let the agent die: vLLM would lose its lookups
                self.errors += 1
                log.exception("tempokv: %s failed", kind)
                if kind == "new":
                    self._publish(ev[1], 0, [], False)
        if self._client is not None:
            self._client.close()

    def _connect(self):
        if self._client is not None:
            return self._client
        if time.monotonic() < self._down_until:
            return None
        try:
            self._client = TempoKVClient(self.endpoint, name="vllm-scheduler",
                                         runtime=self.runtime, max_active=self.max_active,
                                         token_budget=self.token_budget,
                                         async_loads=self.async_loads,
                                         ranks=self.ranks, token=self.token,
                                         timeout_s=self.timeout_s, map_shared_memory=False)
            self._reporter = StepReporter(self._client)
            self._late_seen = 0
        except TempoKVError as e:
            log.warning("tempokv: cannot reach tempokvd at %s: %s", self.endpoint, e)
            self._down_until = time.monotonic() + self.retry_s
            return None
        return self._client

    def _drop_client(self):
        if self._client is not None:
            self._client.close(send_bye=False)
        self._client = self._reporter = None
        self.key_filter = None
        self._known = set()  # a new session is a new runtime: it knows none of them
        self._down_until = time.monotonic() + self.retry_s

    def _idle(self):
        """No event for a while: heartbeats, late errors, and after ``IDLE_FLUSH_S`` (the engine
        idle, or in a long step) what the reporter holds for the next step goes on its own."""
        if self._client is not None and time.monotonic() - self._last_event >= IDLE_FLUSH_S:
            self._flush_reporter()
        if self._client is not None:
            try:
                self._client.poll(0)  # heartbeats, late errors
                self._count_late_errors()
            except TempoKVError:
                self._drop_client()

    def _sync(self):
        """A round trip: the daemon has handled every step sent before it (and their errors,
        if any, are counted)."""
        if self._client is None and self._connect() is None:
            return  # the daemon is down (or was, less than retry_s ago)
        try:
            self._client.heartbeat()
        except TempoKVError as e:
            self.errors += 1
            log.warning("tempokv: heartbeat failed: %s", e)
            self._drop_client()
            return
        self._count_late_errors()

    def _note_instance(self):
        c = self._client
        inst = c.instance if c is not None and not c.closed else None
        if inst is not None and inst != self.daemon_instance:
            self._map_filter(c)  # first: until then the old filter is unusable for inst
            self.daemon_instance = inst

    def _map_filter(self, c):
        """Maps the filter of stored keys the daemon ``c`` reached named in its hello."""
        self.key_filter = None
        path = c.hello.get("key_filter_path") or ""
        if not path:
            return  # none offered (a remote tier, or an older daemon)
        try:
            f = KeyFilter(path)
        except (OSError, TempoKVError) as e:  # another host's path, or not ours to read
            log.info("tempokv: no key filter (every request asks tempokvd): %s", e)
            return
        if f.instance == c.instance:
            self.key_filter = f

    def _count_late_errors(self):
        """Steps are not answered unless they fail: their errors arrive late."""
        c = self._client
        if c is not None and c.late_errors > self._late_seen:
            self.errors += c.late_errors - self._late_seen
            self._late_seen = c.late_errors
            log.warning("tempokv: a step failed: %s", c.last_late_error)

    def _flush_reporter(self):
        if self._reporter is None:
            return
        try:
            self._reporter.flush()
        except TempoKVError as e:
            self.errors += 1
            log.warning("tempokv: step failed: %s", e)
            self._drop_client()

    def _publish(self, rid, hit_chunks, sizes, claimed):
        with self._lock:
            lk = self._lookups.get(rid)
            if lk is not None:
                if not lk.done:
                    self.lookup_s.append(time.monotonic() - lk.posted)
                lk.hit_chunks, lk.object_bytes, lk.claimed = hit_chunks, sizes, claimed
                lk.ready.set()

    def _on_new(self, rid, keys, prompt_tokens, max_output_tokens, chunk_tokens, ranks):
        c = self._connect()
        if c is None:
            return self._publish(rid, 0, [], False)
        try:
            sizes, claimable = c.lookup(keys, with_claimable=True) if keys else ([], 0)
            # A chunk is a hit when every rank's object of it is stored.
            hit = 0
            while hit < len(sizes) // ranks and all(sizes[hit * ranks:(hit + 1) * ranks]):
                hit += 1
            if claimable is not None and claimable // ranks < hit:
                # The whole hit exceeds the daemon's protected budget: the longest prefix
                # that fits is claimed (and loaded), the rest computed.
                hit = claimable // ranks
                self.trimmed_claims += 1
            sizes = sizes[:hit * ranks]
            if hit:  # added and claimed now: the claim's lead is the whole queue time
                # Added with its hit in one call (or not at all, when either is refused).
                c.add_request(rid, prompt_tokens=prompt_tokens, cached_tokens=hit * chunk_tokens,
                              cached_bytes=sum(sizes), max_output_tokens=max_output_tokens,
                              manifest=[(m, h, n) for (m, h), n in zip(keys, sizes)])
                self._known.add(rid)
            else:  # added by the next step
                self._reporter.queued(rid, prompt_tokens, max_output_tokens)
                self._known.add(rid)
        except TempoKVError:
            self._publish(rid, 0, [], False)
            raise
        self._publish(rid, hit, sizes, hit > 0)

    def _on_step(self, snapshot):
        if self._connect() is not None:
            self._reporter.step(snapshot, self._known)

    def _on_finished(self, rid, output_tokens):
        if self._connect() is not None and rid in self._known:
            self._known.discard(rid)
            self._reporter.finished(rid, output_tokens)

    def _on_preempted(self, rid):
        if self._connect() is not None and rid in self._known:
            self._known.discard(rid)  # the daemon forgets it with its claim
            self._reporter.forget(rid)
            self._client.cancel(rid)
