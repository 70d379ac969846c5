"""The connector's worker side: loads and saves on two background threads, off the forward pass.

Each thread owns its own TempoKVClient (the client is not thread-safe), joined to the
scheduler's runtime so that it may retrieve the claims the scheduler reported.

Loader: ``request_retrieval``; when the claim is ready, ``begin_transfer``, one copy per block
and layer from the shared tier straight into the request's paged blocks, ``end_transfer``. The
request is then reported by ``get_finished``. Any failure (an error notification, a daemon that
does not answer, an object of the wrong size, an ``end_transfer`` refused because the daemon may
already have reused the span) marks every block the load was to write as failed, reported by
``get_block_ids_with_load_errors`` in the same step as the request: vLLM recomputes them, never
reading blocks that were not fully written.

Saver: for each full chunk, ``reserve_write``, one copy per block and layer from the paged blocks
straight into the write region, then ``put``, whose wait for durability only this thread sees.
A request with saves keeps its blocks (``request_finished`` returned True) until its chunks are
copied out, then it is reported in ``finished_sending``; a preempted request's queued saves are
dropped and its copy in progress is waited for before vLLM reuses the blocks.
"""

import logging
import queue
import threading
import time

from ..client import TempoKVClient
from ..errors import ResourceExhausted, TempoKVError
from .layout import buffer_tensor

__all__ = ["Loader", "Saver"]

log = logging.getLogger("tempokv.vllm")


class _Link:
    """A lazily (re)connected client for one thread."""

    def __init__(self, endpoint, runtime, name, timeout_s, retry_s=1.0):
        self.args = dict(name=name, runtime=runtime, timeout_s=timeout_s)
        self.endpoint, self.retry_s = endpoint, retry_s
        self.client = None
        self.tier = self.write = None
        self._down_until = 0.0
        self.on_connect = None

    def get(self):
        if self.client is None and time.monotonic() >= self._down_until:
            try:
                self.client = TempoKVClient(self.endpoint, **self.args)
                self.tier = buffer_tensor(self.client.tier) if self.client.tier else None
                self.write = (buffer_tensor(self.client.write_region)
                              if self.client.write_region else None)
                if self.on_connect:
                    self.on_connect(self)
            except TempoKVError as e:
                log.warning("tempokv: cannot reach tempokvd at %s: %s", self.endpoint, e)
                self.drop()
        return self.client

    def drop(self):
        self.tier = self.write = None
        if self.client is not None:
            self.client.close(send_bye=False)
        self.client = None
        self._down_until = time.monotonic() + self.retry_s


class Loader:
    def __init__(self, link, layout, load_timeout_s=60.0, digests=None, delay_s=0.0):
        self.link, self.layout, self.load_timeout_s = link, layout, load_timeout_s
        self.delay_s = delay_s  # tests: a window in which the daemon can die mid-load
        self.digests = digests
        self._q = queue.Queue()
        self._lock = threading.Lock()
        self._finished, self._errors = set(), set()
        self._pending = {}  # rid -> [spec, deadline, state]; state None | "ready" | error
        self.loaded_tokens = 0
        self.failed = 0
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="tempokv-loader", daemon=True)
        self._thread.start()

    def submit(self, spec):
        self._q.put(("load", spec))

    def cancel(self, req_ids):
        if req_ids:
            self._q.put(("cancel", set(req_ids)))

    def take_finished(self):
        """(request ids finished loading, ok or not; block ids that failed) since the last call."""
        with self._lock:
            done, errs = self._finished, self._errors
            self._finished, self._errors = set(), set()
            return done, errs

    def busy(self):
        return bool(self._pending) or not self._q.empty()

    def close(self):
        self._stop = True
        self._thread.join(timeout=5)
        self.link.drop()

    def _run(self):
        while not self._stop:
            try:
                kind, arg = self._q.get(timeout=0.005 if self._pending else 0.1)
                if kind == "load":
                    self._start(arg)
                else:
                    self._cancel(arg)
            except queue.Empty:
                pass
            self._poll()

    def _fail(self, spec, why):
        self.failed += 1
        log.warning("tempokv: load of %s failed (%s): vLLM recomputes it", spec.req_id, why)
        with self._lock:
            self._errors.update(spec.block_ids[spec.first_block:])
            self._finished.add(spec.req_id)

    def _start(self, spec):
        c = self.link.get()
        if c is None:
            return self._fail(spec, "tempokvd unreachable")
        entry = [spec, time.monotonic() + self.load_timeout_s, None]

        def on_ready(rid, path, error):
            entry[2] = "ready" if error is None else error

        try:
            answer = c.request_retrieval(spec.rid, on_ready=on_ready)
        except TempoKVError as e:
            self._broken(e)
            return self._fail(spec, e)
        if answer == "wait":
            self._pending[spec.rid] = entry
        else:
            self._copy(spec)

    def _cancel(self, req_ids):
        for rid, (spec, _, _) in list(self._pending.items()):
            if spec.req_id in req_ids:
                del self._pending[rid]
                self._try_cancel(rid)
                self._fail(spec, "request finished while loading")

    def _poll(self):
        c = self.link.client
        if c is None:
            for rid, (spec, _, _) in list(self._pending.items()):
                del self._pending[rid]
                self._fail(spec, "lost tempokvd")
            return
        try:
            c.poll(0)  # delivers notifications; sends heartbeats when due
        except TempoKVError as e:
            self._broken(e)
            return
        now = time.monotonic()
        for rid, (spec, deadline, state) in list(self._pending.items()):
            if state == "ready":
                del self._pending[rid]
                self._copy(spec)
            elif state is not None:
                del self._pending[rid]
                self._fail(spec, state)
            elif now > deadline:
                del self._pending[rid]
                self._try_cancel(rid)
                self._fail(spec, f"not ready within {self.load_timeout_s} s")

    def _copy(self, spec):
        c = self.link.client
        bpc = self.layout.blocks_per_chunk
        if self.delay_s:
            time.sleep(self.delay_s)
        try:
            c.begin_transfer(spec.rid)
            spans = c.objects(spec.rid)
            if len(spans) != len(spec.keys):
                raise ValueError(f"{len(spans)} objects for {len(spec.keys)} chunks")
            for i, (offset, nbytes) in enumerate(spans):
                if nbytes != self.layout.object_bytes:
                    raise ValueError(f"object {i} is {nbytes} bytes, this engine's chunks are "
                                     f"{self.layout.object_bytes}")
                first = min(bpc, max(0, spec.first_block - i * bpc))
                self.layout.load(self.link.tier[offset:offset + nbytes],
                                 spec.block_ids[i * bpc:(i + 1) * bpc], first)
            # Only now are the bytes known to be the claim's: a refused end_transfer means the
            # daemon may have reused the spans while we copied.
            c.end_transfer(spec.rid)
        except (TempoKVError, ValueError, RuntimeError) as e:
            self._try_cancel(spec.rid)
            if isinstance(e, TempoKVError):
                self._broken(e)
            return self._fail(spec, e)
        if self.digests is not None:
            for i, key in enumerate(spec.keys):
                for j, b in enumerate(spec.block_ids[i * bpc:(i + 1) * bpc]):
                    if i * bpc + j >= spec.first_block:
                        self.digests.record("load", key, j, self.layout, b)
        self.loaded_tokens += (len(spec.block_ids) - spec.first_block) * self.layout.block_size
        with self._lock:
            self._finished.add(spec.req_id)

    def _try_cancel(self, rid):
        c = self.link.client
        if c is not None:
            try:
                c.cancel(rid)
            except TempoKVError:
                pass

    def _broken(self, e):
        if getattr(e, "code", "") in ("Unavailable",):
            self.link.drop()


class Saver:
    def __init__(self, link, layout, retry_s=30.0, digests=None):
        self.link, self.layout, self.retry_s, self.digests = link, layout, retry_s, digests
        self._cv = threading.Condition()
        self._jobs = []  # queued SaveSpecs
        self._outstanding = {}  # req_id -> save specs not yet copied out (or dropped)
        self._current = None  # req_id being copied now
        self._putting = False  # a save taken from the queue is not durable (or failed) yet
        self.saved = self.failed = 0
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="tempokv-saver", daemon=True)
        self._thread.start()

    def submit(self, specs):
        with self._cv:
            for s in specs:
                self._jobs.append(s)
                self._outstanding[s.req_id] = self._outstanding.get(s.req_id, 0) + 1
            self._cv.notify_all()

    def drop(self, req_ids):
        """Preemption: forget the queued saves of ``req_ids`` and wait for a copy in progress
        from their blocks, so vLLM may overwrite them on return."""
        if not req_ids:
            return
        with self._cv:
            keep = []
            for s in self._jobs:
                if s.req_id in req_ids:
                    self._done(s.req_id)
                else:
                    keep.append(s)
            self._jobs = keep
            while self._current in req_ids:
                self._cv.wait()

    def copied_out(self, req_ids):
        """Those of ``req_ids`` with no save left to copy out."""
        with self._cv:
            return {r for r in req_ids if self._outstanding.get(r, 0) == 0}

    def had_saves(self, req_id):
        with self._cv:
            return req_id in self._outstanding

    def forget(self, req_id):
        with self._cv:
            self._outstanding.pop(req_id, None)

    def busy(self):
        """Whether a save is queued, being copied or waiting for durability."""
        with self._cv:
            return bool(self._jobs) or self._current is not None or self._putting

    def close(self, drain_s=30.0):
        deadline = time.monotonic() + drain_s
        while self.busy() and time.monotonic() < deadline:
            time.sleep(0.01)
        with self._cv:
            self._stop = True
            self._cv.notify_all()
        self._thread.join(timeout=5)
        self.link.drop()

    def _done(self, req_id):
        n = self._outstanding.get(req_id, 0)
        if n > 0:
            self._outstanding[req_id] = n - 1

    def _run(self):
        while True:
            with self._cv:
                while not self._jobs and not self._stop:
                    self._cv.wait(timeout=0.5)
                    if not self._jobs and self.link.client is not None:
                        try:
                            self.link.client.poll(0)  # heartbeats
                        except TempoKVError:
                            self.link.drop()
                if self._stop:
                    return
                spec = self._jobs.pop(0)
                self._current = spec.req_id
                self._putting = True
            reserved = None
            try:
                reserved = self._copy(spec)
            except Exception:  # never let the thread die: requests would hold blocks forever
                log.exception("tempokv: save of %s failed", spec.key)
            finally:
                with self._cv:
                    self._current = None
                    self._done(spec.req_id)
                    self._cv.notify_all()
            if reserved is not None:
                self._put(spec, reserved)
            with self._cv:
                self._putting = False

    def _copy(self, spec):
        """Reserve and copy; returns the offset (blocks are free for vLLM after this)."""
        nbytes = self.layout.object_bytes
        deadline = time.monotonic() + self.retry_s
        while True:
            c = self.link.get()
            if c is None:
                self.failed += 1
                return None
            try:
                offset = c.reserve_write(nbytes)
                break
            except ResourceExhausted:
                if time.monotonic() > deadline:
                    self.failed += 1
                    return None
                time.sleep(0.005)  # outstanding puts free the region
            except TempoKVError as e:
                log.warning("tempokv: save of %s dropped: %s", spec.key, e)
                self.failed += 1
                self.link.drop()
                return None
        try:
            if self.digests is not None:
                for j, b in enumerate(spec.block_ids):
                    self.digests.record("save", spec.key, j, self.layout, b)
            self.layout.save(spec.block_ids, self.link.write[offset:offset + nbytes])
        except Exception:
            try:
                c.abort_write(offset)
            except TempoKVError:
                pass
            self.failed += 1
            raise
        return offset

    def _put(self, spec, offset):
        c = self.link.client
        try:
            c.put_reserved(spec.key, spec.first_token, spec.end_token, offset,
                           self.layout.object_bytes)
            self.saved += 1
        except TempoKVError as e:
            self.failed += 1
            log.warning("tempokv: put of %s failed: %s", spec.key, e)
            if e.code == "Unavailable":
                self.link.drop()
