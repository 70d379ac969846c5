"""Loader: the worker side's loads, on a background thread, off the forward pass.

``request_retrieval``; when the claim is ready, ``begin_transfer``, then this rank's object of
each chunk (a claim lists every rank's, chunk by chunk) is checked (its span inside the tier,
its size, its header: this rank's key, rank and layout, and the payload's checksum) before one
copy of all its chunks from the shared tier straight into the request's paged blocks
(``KVLayout.load_chunks``), then ``end_transfer``. The request is then reported by
``get_finished``. Any failure (an error notification, a daemon that does not answer, a span or
header that is not the one asked for, an ``end_transfer`` refused because the daemon may
already have reused the span) marks every block the load was to write as failed, reported by
``get_block_ids_with_load_errors`` in the same step as the request: vLLM recomputes them, never
reading blocks that were not fully written, nor KV of another identity.
"""

import logging
import os
import queue
import select
import threading
import time

import xxhash

from ..errors import TempoKVError
from . import header
from .link import ReachRequest
from .streams import CopyStream

__all__ = ["Loader"]

TIMELINE_MAX = 1024

log = logging.getLogger("tempokv.vllm")


class Loader:
    def __init__(self, link, layout, identity, load_timeout_s=60.0, digests=None, delay_s=0.0,
                 alter_block=False):
        self.link, self.layout, self.load_timeout_s = link, layout, load_timeout_s
        self.identity = identity  # identity.WorkerIdentity: the keys and headers it accepts
        self.object_bytes = header.HEADER_BYTES + layout.object_bytes
        self.stream = CopyStream(layout.device)
        self.delay_s = delay_s  # tests: a window in which the daemon can die mid-load
        # The e2e check's negative control: one bit of the first block loaded is flipped after
        # the copy, so that its oracle has something to catch.
        self.alter_block = alter_block
        self.digests = digests
        self._q = queue.Queue()
        self._lock = threading.Lock()
        self._finished, self._errors = set(), set()
        self._pending = {}  # rid -> [spec, deadline, state]; state None | "ready" | error
        self._moments = {}  # rid -> its timeline entry, until copied or failed
        self.loaded_tokens = 0
        self.failed = 0
        # Loads copied, and their claims' footprint held while copied: Σ bytes × seconds from
        # begin_transfer to end_transfer (the C floor: what any stage-ready policy must hold).
        self.transfers = 0
        self.transfer_s = 0.0
        self.transfer_byte_s = 0.0
        # Σ over copied loads of the wait from the worker's submit to the copy's start (the
        # claim's staging as this load saw it), and of its part until the claim was seen ready
        # (the rest is this thread getting round to the copy: other copies, or starved of CPU).
        self.wait_s = 0.0
        self.ready_wait_s = 0.0
        self.cpu_s = 0.0  # this thread's CPU time: far below its wall time when starved
        # Per load, its moments (time.monotonic()): submitted by the worker, taken up by this
        # thread, connected (the link's client in hand), retrieval requested, seen ready, copy
        # started and ended (the last three absent when it failed first). Bounded: the first
        # TIMELINE_MAX loads (a diagnosis of a run, not a log).
        self.timeline = []
        # The thread sleeps until there is something to do: a new load, cancel or reach (a byte
        # on this pipe), the daemon's notification that a claim is ready (its socket), or the
        # nearest load deadline; no polling interval (it polled every 5 ms while a load waited:
        # a copy started up to 5 ms after its claim was ready, and each wake-up took the GIL
        # from vLLM's step). ``wakeups`` counts the sleeps that ended (tests).
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self.wakeups = 0
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="tempokv-loader", daemon=True)
        self._thread.start()

    def submit(self, spec):
        self._put(("load", (spec, time.monotonic())))

    def _put(self, item):
        self._q.put(item)
        self._wake()

    def _wake(self):
        try:
            os.write(self._wake_w, b"\0")
        except BlockingIOError:
            pass  # the pipe is full of wake-ups already

    def reach(self, timeout_s=10.0):
        """The daemon instance the loader thread's link reaches now, or None (link.ReachRequest)."""
        request = ReachRequest()
        self._put(("reach", request))
        return request.wait(timeout_s)

    def cancel(self, req_ids):
        if req_ids:
            self._put(("cancel", set(req_ids)))

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
        self._wake()
        self._thread.join(timeout=5)
        self.link.drop()
        if not self._thread.is_alive():
            os.close(self._wake_r)
            os.close(self._wake_w)

    def _run(self):
        while not self._stop:
            self._sleep()
            while True:
                try:
                    kind, arg = self._q.get_nowait()
                except queue.Empty:
                    break
                if kind == "load":
                    self._start(*arg)
                elif kind == "reach":
                    arg.answer(self.link)
                else:
                    self._cancel(arg)
            self._poll()
            self.cpu_s = time.thread_time()

    # At most this long asleep: the stop flag and a link that went away are seen by then.
    MAX_SLEEP_S = 0.1

    def _sleep(self):
        """Until a wake-up byte, the daemon's next message while a load waits, or the nearest
        load deadline (at most MAX_SLEEP_S)."""
        if self._q.empty():
            timeout = self.MAX_SLEEP_S
            if self._pending:
                nearest = min(e[1] for e in self._pending.values())
                timeout = min(timeout, max(0.0, nearest - time.monotonic()))
            c = self.link.client if self._pending else None
            if c is None:
                select.select([self._wake_r], [], [], timeout)
            else:
                try:
                    c.wait(timeout, fds=[self._wake_r])
                except TempoKVError as e:
                    self._broken(e)
            self.wakeups += 1
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass

    def _fail(self, spec, why):
        self.failed += 1
        self._moments.pop(spec.rid, None)
        log.warning("tempokv: load of %s failed (%s): vLLM recomputes it", spec.req_id, why)
        with self._lock:
            self._errors.update(spec.block_ids[spec.first_block:])
            self._finished.add(spec.req_id)

    def _start(self, spec, submitted):
        moments = {"req_id": spec.req_id, "submitted": submitted, "taken": time.monotonic()}
        if len(self.timeline) < TIMELINE_MAX:
            self.timeline.append(moments)
        self._moments[spec.rid] = moments
        c = self.link.get()
        moments["connected"] = time.monotonic()
        if c is None:
            return self._fail(spec, "tempokvd unreachable")
        entry = [spec, time.monotonic() + self.load_timeout_s, None, submitted]

        def on_ready(rid, path, error):
            entry[2] = "ready" if error is None else error

        try:
            answer = c.request_retrieval(spec.rid, on_ready=on_ready)
        except TempoKVError as e:
            self._broken(e)
            return self._fail(spec, e)
        moments["requested"] = time.monotonic()
        if answer == "wait":
            self._pending[spec.rid] = entry
        else:
            self._copy(spec, submitted, time.monotonic())

    def _cancel(self, req_ids):
        for rid, (spec, *_) in list(self._pending.items()):
            if spec.req_id in req_ids:
                del self._pending[rid]
                self._try_cancel(rid)
                self._fail(spec, "request finished while loading")

    def _poll(self):
        c = self.link.client
        if c is None:
            for rid, (spec, *_) in list(self._pending.items()):
                del self._pending[rid]
                self._fail(spec, "lost tempokvd")
            return
        try:
            c.poll(0)  # delivers notifications; sends heartbeats when due
        except TempoKVError as e:
            self._broken(e)
            return
        now = time.monotonic()
        for rid, (spec, deadline, state, submitted) in list(self._pending.items()):
            if state == "ready":
                del self._pending[rid]
                self._copy(spec, submitted, now)
            elif state is not None:
                del self._pending[rid]
                self._fail(spec, state)
            elif now > deadline:
                del self._pending[rid]
                self._try_cancel(rid)
                self._fail(spec, f"not ready within {self.load_timeout_s} s")

    def _objects(self, c, spec):
        """(payload tensor, block ids, first) of each chunk of ``spec``: this rank's objects,
        every one checked before anything is copied."""
        rank = self.identity.rank
        if spec.ranks != rank.world:
            raise ValueError(f"a claim of {spec.ranks} objects per chunk, this engine has "
                             f"{rank.world} ranks")
        spans = c.objects(spec.rid)
        if len(spans) != len(spec.hashes) * spec.ranks:
            raise ValueError(f"{len(spans)} objects for {len(spec.hashes)} chunks of "
                             f"{spec.ranks} ranks")
        bpc = self.layout.blocks_per_chunk
        tier = self.link.tier
        hb = header.HEADER_BYTES
        chunks = []
        for i, chunk_hash in enumerate(spec.hashes):
            offset, nbytes = spans[i * spec.ranks + rank.index]
            if nbytes != self.object_bytes:
                raise header.HeaderMismatch(f"object {i} is {nbytes} bytes, this engine's are "
                                            f"{self.object_bytes}")
            if tier is None or offset < 0 or offset + nbytes > tier.numel():
                raise header.HeaderMismatch(f"object {i} at [{offset}, +{nbytes}) is outside "
                                            "the tier")
            obj = tier[offset:offset + nbytes]
            want = header.check(obj[:hb].numpy(), self.identity.key(chunk_hash), rank,
                                self.identity.layout_digest, self.layout.object_bytes)
            payload = obj[hb:]
            if xxhash.xxh3_64_intdigest(payload.numpy()) != want:
                raise header.HeaderMismatch(f"object {i}: payload checksum mismatch")
            first = min(bpc, max(0, spec.first_block - i * bpc))
            chunks.append((payload, spec.block_ids[i * bpc:(i + 1) * bpc], first))
        return chunks

    def _copy(self, spec, submitted, seen_ready):
        c = self.link.client
        bpc = self.layout.blocks_per_chunk
        if self.delay_s:
            time.sleep(self.delay_s)
        moments = self._moments.pop(spec.rid, {})
        moments["ready_seen"] = seen_ready
        try:
            t0 = time.monotonic()
            moments["copy_started"] = t0
            c.begin_transfer(spec.rid)
            chunks = self._objects(c, spec)
            with self.stream.use():  # the loader's own CUDA stream (streams.py)
                self.layout.load_chunks(chunks)  # one copy: few GIL hand-overs (layout.py)
            # Only now are the bytes known to be the claim's: a refused end_transfer means the
            # daemon may have reused the spans while we copied.
            c.end_transfer(spec.rid)
            held_s = time.monotonic() - t0
            moments["copy_ended"] = t0 + held_s
        except (TempoKVError, ValueError, RuntimeError) as e:
            if getattr(e, "code", "") == "Unavailable":
                self._broken(e)  # nobody to cancel with: the daemon ends the claim itself
            else:
                self._try_cancel(spec.rid)
            return self._fail(spec, e)
        if self.alter_block and spec.first_block < len(spec.block_ids):
            self.alter_block = False
            self.layout.flip_bit(spec.block_ids[spec.first_block])
        if self.digests is not None:
            for i, chunk_hash in enumerate(spec.hashes):
                key = self.identity.key(chunk_hash)
                for j, b in enumerate(spec.block_ids[i * bpc:(i + 1) * bpc]):
                    if i * bpc + j >= spec.first_block:
                        self.digests.record("load", key, j, self.layout, b, req=spec.req_id,
                                            chunk=i, rank=self.identity.rank.index)
        self.loaded_tokens += (len(spec.block_ids) - spec.first_block) * self.layout.block_size
        self.transfers += 1
        self.wait_s += t0 - submitted
        self.ready_wait_s += seen_ready - submitted
        self.transfer_s += held_s
        self.transfer_byte_s += len(spec.hashes) * self.object_bytes * held_s
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
        if getattr(e, "code", "") == "Unavailable":
            self.link.drop()
