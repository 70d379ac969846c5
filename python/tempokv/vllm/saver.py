"""Saver: the worker side's saves, on a background thread, off the forward pass.

For each full chunk, ``reserve_write``, one copy from the paged blocks straight into the write
region behind the object's header (``header.py``: this rank's key, rank, layout digest and the
payload's checksum), then ``put`` under this rank's key, whose wait for durability only this
thread sees.
A request with saves keeps its blocks (``request_finished`` returned True) until its chunks are
copied out, then it is reported in ``finished_sending``. A preempted request's blocks are freed
by vLLM's scheduler and may be written by the very next forward pass; ``flush`` (called from
``handle_preemptions``, before that pass) copies its queued saves out first, as vLLM's own
offloading connectors finish their transfers there.
"""

import logging
import threading
import time

import torch
import xxhash

from ..errors import ResourceExhausted, TempoKVError
from . import header
from .link import ReachRequest
from .streams import CopyStream

__all__ = ["Saver"]

log = logging.getLogger("tempokv.vllm")


class Saver:
    def __init__(self, link, layout, identity, retry_s=30.0, digests=None, delay_s=0.0,
                 flush_timeout_s=10.0):
        self.link, self.layout, self.retry_s, self.digests = link, layout, retry_s, digests
        self.identity = identity  # identity.WorkerIdentity: this rank's keys and headers
        self.object_bytes = header.HEADER_BYTES + layout.object_bytes
        self.stream = CopyStream(layout.device)
        self.chunk_tokens = layout.blocks_per_chunk * layout.block_size
        self.delay_s = delay_s  # tests: each save waits this long before its copy
        self.flush_timeout_s = flush_timeout_s  # a preemption's saves not copied by then drop
        self._cv = threading.Condition()
        self._jobs = []  # queued SaveSpecs
        self._outstanding = {}  # req_id -> save specs not yet copied out (or dropped)
        self._current = None  # req_id being copied now
        self._putting = False  # a save taken from the queue is not durable (or failed) yet
        self.saved = self.failed = 0
        self.dropped = 0  # saves of preempted requests given up (flush timed out)
        self.flushed = 0  # saves of preempted requests copied out by a flush
        self._abandoned = set()  # req_ids whose save in progress stops waiting for room
        self._stop = False
        self._reaches = []  # link.ReachRequests for the saver thread to answer (reach())
        self._thread = threading.Thread(target=self._run, name="tempokv-saver", daemon=True)
        self._thread.start()

    def submit(self, specs, event=None):
        """Queues ``specs``; ``event`` (``streams.compute_event``, recorded after the forward
        pass that computed their blocks): their copies start after it."""
        with self._cv:
            for s in specs:
                s.ready_event = event
                self._jobs.append(s)
                self._outstanding[s.req_id] = self._outstanding.get(s.req_id, 0) + 1
            self._cv.notify_all()

    def reach(self, timeout_s=10.0):
        """The daemon instance the saver thread's link reaches now (between saves), or None
        (link.ReachRequest)."""
        request = ReachRequest()
        with self._cv:
            self._reaches.append(request)
            self._cv.notify_all()
        return request.wait(timeout_s)

    def flush(self, req_ids):
        """Preemption: vLLM has freed the blocks of ``req_ids``, and the forward pass about to
        run may overwrite them. Their queued saves go to the front of the queue and this
        returns once each is copied into the write region (its put, and durability, follow
        on the saver thread) or failed. Saves not copied within ``flush_timeout_s`` (the write
        region full, say) are dropped; a copy in progress is always waited for."""
        if not req_ids:
            return
        mine = lambda s: s.req_id in req_ids  # noqa: E731
        deadline = time.monotonic() + self.flush_timeout_s
        with self._cv:
            queued, dropped = sum(1 for s in self._jobs if mine(s)), 0
            self._jobs = ([s for s in self._jobs if mine(s)] +
                          [s for s in self._jobs if not mine(s)])
            self._cv.notify_all()
            while any(mine(s) for s in self._jobs):
                left = deadline - time.monotonic()
                if left <= 0:
                    keep = []
                    for s in self._jobs:
                        if mine(s):
                            self._done(s.req_id)
                            dropped += 1
                        else:
                            keep.append(s)
                    self._jobs = keep
                    self.dropped += dropped
                    self._abandoned |= set(req_ids)
                    log.warning("tempokv: preemption: saves of %s not copied within %.0f s "
                                "dropped", sorted(req_ids), self.flush_timeout_s)
                    break
                self._cv.wait(left)
            while self._current in req_ids:
                self._cv.wait()
            self._abandoned -= set(req_ids)
            self.flushed += queued - dropped

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
                while not self._jobs and not self._stop and not self._reaches:
                    self._cv.wait(timeout=0.5)
                    if not self._jobs and self.link.client is not None:
                        try:
                            self.link.client.poll(0)  # heartbeats
                        except TempoKVError:
                            self.link.drop()
                if self._stop:
                    return
                reaches, self._reaches = self._reaches, []
                if not reaches:
                    spec = self._jobs.pop(0)
                    self._current = spec.req_id
                    self._putting = True
            if reaches:  # round trips outside the lock: submit() never waits on the daemon
                for request in reaches:
                    request.answer(self.link)
                continue
            reserved = None
            if self.delay_s:
                time.sleep(self.delay_s)
            try:
                reserved = self._copy(spec)
            except Exception:  # never let the thread die: requests would hold blocks forever
                log.exception("tempokv: save of chunk %016x failed", spec.chunk_hash)
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
        nbytes = self.object_bytes
        key = self.identity.key(spec.chunk_hash)
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
                with self._cv:
                    abandoned = spec.req_id in self._abandoned
                if abandoned or time.monotonic() > deadline:
                    self.failed += 1
                    return None
                time.sleep(0.005)  # outstanding puts free the region
            except TempoKVError as e:
                log.warning("tempokv: save of %s dropped: %s", key, e)
                self.failed += 1
                self.link.drop()
                return None
        try:
            if self.digests is not None:
                for j, b in enumerate(spec.block_ids):
                    self.digests.record("save", key, j, self.layout, b, req=spec.req_id,
                                        chunk=spec.first_token // self.chunk_tokens,
                                        rank=self.identity.rank.index)
            obj = self.link.write[offset:offset + nbytes]
            payload = obj[header.HEADER_BYTES:]
            with self.stream.use():  # the saver's own CUDA stream, after the forward pass
                self.stream.wait(getattr(spec, "ready_event", None))
                self.layout.save(spec.block_ids, payload)
                self.stream.finish()
            checksum = xxhash.xxh3_64_intdigest(payload.numpy())
            head = header.pack(key, self.identity.rank, self.identity.layout_digest,
                               self.layout.object_bytes, checksum)
            obj[:header.HEADER_BYTES].copy_(torch.frombuffer(bytearray(head), dtype=torch.uint8))
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
        key = self.identity.key(spec.chunk_hash)
        try:
            c.put_reserved(key, spec.first_token, spec.end_token, offset, self.object_bytes)
            self.saved += 1
        except TempoKVError as e:
            self.failed += 1
            log.warning("tempokv: put of %s failed: %s", key, e)
            if e.code == "Unavailable":
                self.link.drop()
