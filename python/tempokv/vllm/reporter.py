"""StepReporter: the one place that turns vLLM's scheduler state into tempokvd's adapter calls.

It speaks protocol v2's ``step`` op: one fire-and-forget message per scheduler step with the
requests queued (without a hit: a hit's request is added and claimed at once, by calls) and
finished since the last step, the step's prefills (with the chunk's token count), decoders and
requests scheduled while their KV loads, the waiting order, and vLLM's measured duration of the
iterations earlier steps started, from which the daemon's adapter calibrates its costs.

``Snapshot`` is what ``TempoKVScheduler`` hands over after each ``schedule()``: bounded (at most
``MAX_WAITING`` waiting and ``max_num_seqs`` running entries), plain data, no vLLM objects.

With ``TEMPOKV_STEP_LOG`` set to a path, every step sent is also appended there as one JSON line
(``t``: ``time.monotonic()`` when sent, ``seq``, and the step's fields), so what the daemon's
adapter was told can be read back beside its projections (/claims). A log that cannot be
written is reported once and dropped; the steps still go.
"""

import json
import os
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass, field

__all__ = ["Snapshot", "StepReporter", "MAX_WAITING"]

MAX_WAITING = 256  # the waiting order beyond this is not worth a projection
_SEQS_KEPT = 64  # iterations whose step seq is remembered for their measurement


@dataclass
class Snapshot:
    waiting: list = field(default_factory=list)  # [(rid, prompt_tokens)] in scheduling order
    # [(rid, computed, generated, prompt_tokens)]: running, and waiting for their KV to load
    running: list = field(default_factory=list)
    prefills: list = field(default_factory=list)  # [(rid, prompt tokens computed this step)]
    decoders: list = field(default_factory=list)  # rids decoding a token this step
    token_budget: int = 0  # max_num_batched_tokens
    max_num_seqs: int = 0
    chunked_prefill: bool = True
    last_step_s: float = 0.0  # measured duration of the previous step (0 before the first)
    step_estimate_s: float = 0.0  # smoothed measured step duration: the boundary of this step
    iteration: int = 0  # this step's number (the scheduler's), 0 when it computes nothing
    measured: list = field(default_factory=list)  # [(iteration, seconds)] measured since


class StepReporter:
    """Sends one ``step`` per scheduler step, tracking per request what was already said.

    Only requests of this session (``known``: added in it, or queued here for the next step;
    not preempted, as the daemon forgets a request with its cancelled claim) are mentioned. A
    request is admitted once, when vLLM first schedules it (its KV loading, or its prefill).
    The waiting order is vLLM's: the daemon ignores requests in it that were admitted before
    or ended. Steps that would say nothing new are not sent.
    """

    def __init__(self, client, log_path=None):
        self.client = client
        self._log_path = log_path if log_path is not None else os.environ.get("TEMPOKV_STEP_LOG")
        self._log_file = None
        self._admitted = set()
        self._queued = OrderedDict()  # rid -> row, for the next step
        self._finished = []  # [(rid, output_tokens)] for the next step
        self._seqs = OrderedDict()  # the scheduler's iteration number -> the step's seq
        self._measured = []  # [(seq, ns)] not sent yet
        self._last_waiting = None
        self.steps_sent = 0

    def queued(self, rid, prompt_tokens, max_output_tokens, cached_tokens=0, cached_bytes=0):
        """A request without a claim joined vLLM's queue: it is added with the next step."""
        self._queued[rid] = (rid, prompt_tokens, cached_tokens, cached_bytes, max_output_tokens)

    def finished(self, rid, output_tokens):
        self._admitted.discard(rid)
        if self._queued.pop(rid, None) is None:
            self._finished.append((rid, output_tokens))

    def forget(self, rid):
        """The daemon forgot the request (its claim was cancelled): never mention it again."""
        self._admitted.discard(rid)
        self._queued.pop(rid, None)

    def pending(self):
        return bool(self._queued or self._finished)

    def step(self, snap, known):
        """Sends the snapshot's step; returns its seq, or None when there was nothing to say."""
        def ok(rid):
            return rid in known or rid in self._queued

        for it, seconds in snap.measured:
            seq = self._seqs.pop(it, None)
            if seq is not None:
                self._measured.append((seq, int(seconds * 1e9)))
        prefills = [(rid, n) for rid, n in snap.prefills if ok(rid)]
        decoders = [rid for rid in snap.decoders if ok(rid)]
        scheduled = {rid for rid, _ in prefills}
        admitted = []
        for rid, _, _, _ in snap.running:
            if ok(rid) and rid not in self._admitted and rid not in scheduled:
                admitted.append(rid)
        self._admitted.update(admitted)
        self._admitted.update(scheduled)
        # vLLM's order as it is: the daemon leaves out requests admitted before (back in the
        # queue after a failed load) and requests that ended (finished, claim cancelled).
        waiting = [rid for rid, _ in snap.waiting if ok(rid)]
        if not (prefills or decoders or admitted or self._queued or self._finished or
                self._measured or waiting != self._last_waiting):
            return None
        fields = dict(prefills=prefills, decoders=decoders, finished=self._finished,
                      queued=list(self._queued.values()), waiting=waiting,
                      boundary_in_ns=int(snap.step_estimate_s * 1e9), admitted=admitted,
                      measured=self._measured)
        seq = self.client.step(**fields)
        if self._log_path:
            self._log(seq, fields)
        self.steps_sent += 1
        self._queued.clear()
        self._finished = []
        self._measured = []
        self._last_waiting = waiting
        if snap.iteration and (prefills or decoders):
            self._seqs[snap.iteration] = seq
            while len(self._seqs) > _SEQS_KEPT:
                self._seqs.popitem(last=False)
        return seq

    def _log(self, seq, fields):
        # Opened once, line-buffered: a step is one write, not an open and a close.
        try:
            if self._log_file is None:
                self._log_file = open(self._log_path, "a", buffering=1)
            self._log_file.write(json.dumps(dict(t=time.monotonic(), seq=seq, **fields)) + "\n")
        except OSError as e:
            print(f"tempokv: step log {self._log_path!r} dropped: {e}", file=sys.stderr)
            self._log_path = None

    def flush(self):
        """Sends what is pending (requests queued or finished) when no step is coming."""
        if self.pending():
            last = self._last_waiting or []
            self.step(Snapshot(waiting=[(rid, 0) for rid in last]), set(last))
