"""TempoKVScheduler / TempoKVAsyncScheduler: vLLM's Scheduler / AsyncScheduler, plus a bounded
snapshot for the connector after each step.

The connector cannot see vLLM's waiting queue, so this subclass (``scheduler_cls``) hands it,
after every ``schedule()``: the waiting order with prompt lengths (at most ``MAX_WAITING``), the
running requests' computed and generated tokens, which of them prefill or decode in this step,
the token budget, the sequence limit, the chunked-prefill setting, and the measured duration
of the previous step (``schedule()`` return to ``update_from_output()``; with async scheduling,
where the next step is scheduled before the previous one's output arrives, the interval between
outputs). Scheduling itself is vLLM's, unchanged. Use the async variant where vLLM schedules
asynchronously (its default when nothing prevents it): a plain Scheduler subclass turns that off.
"""

import time

from vllm.v1.core.sched.async_scheduler import AsyncScheduler
from vllm.v1.core.sched.scheduler import Scheduler

from .connector import TempoKVConnector
from .reporter import MAX_WAITING, Snapshot

__all__ = ["TempoKVScheduler", "TempoKVAsyncScheduler"]


class _Snapshots:
    """The mixin: wraps schedule() and update_from_output() of a vLLM scheduler class.

    A step is measured from the first schedule() after the previous output to this output:
    the forward pass with a synchronous scheduler, the interval between outputs with an
    asynchronous one (which schedules step k+1 before step k's output), never an idle gap."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._tempokv = self.connector if isinstance(self.connector, TempoKVConnector) else None
        self._step_started = None  # the first schedule() since the last output
        self._last_posted = None  # (waiting, running) of the last snapshot handed over
        self.last_step_s = 0.0
        self.step_estimate_s = 0.0

    def schedule(self, *args, **kwargs):
        out = super().schedule(*args, **kwargs)
        if self._tempokv is not None:
            snap = self._snapshot(out)
            # A step that schedules nothing while the queues stay as they were (the engine
            # spinning while requests wait for their KV to load: thousands of steps a second)
            # says nothing new; handing each over flooded the agent, which then answered
            # lookups seconds late and reported orders older than the worker's loads.
            key = (tuple(snap.waiting), tuple(r[0] for r in snap.running))
            if out.total_num_scheduled_tokens > 0 or key != self._last_posted:
                self._last_posted = key
                self._tempokv.on_schedule(snap)
        if self._step_started is None:
            self._step_started = time.monotonic()
        return out

    def update_from_output(self, *args, **kwargs):
        if self._step_started is not None:
            self.last_step_s = time.monotonic() - self._step_started
            a = 0.3  # smoothing of the measured step time
            self.step_estimate_s = (self.last_step_s if self.step_estimate_s == 0 else
                                    a * self.last_step_s + (1 - a) * self.step_estimate_s)
            self._step_started = None
        return super().update_from_output(*args, **kwargs)

    def _snapshot(self, out):
        c = self._tempokv
        snap = Snapshot(token_budget=self.scheduler_config.max_num_batched_tokens,
                        max_num_seqs=self.scheduler_config.max_num_seqs,
                        chunked_prefill=bool(self.scheduler_config.enable_chunked_prefill),
                        last_step_s=self.last_step_s, step_estimate_s=self.step_estimate_s)
        for i, req in enumerate(self.waiting):
            if i >= MAX_WAITING:
                break
            rid = c.rid_of(req.request_id)
            if rid is not None:
                snap.waiting.append((rid, req.num_prompt_tokens))
        # Requests whose KV is loading were scheduled by vLLM: for the adapter, admitted.
        for req in getattr(self, "kv_holding_waiting", ()):
            rid = c.rid_of(req.request_id)
            if rid is not None:
                snap.running.append((rid, 0, 0, req.num_prompt_tokens))
        for req in self.running:
            rid = c.rid_of(req.request_id)
            if rid is None:
                continue
            snap.running.append((rid, req.num_computed_tokens, req.num_output_tokens,
                                 req.num_prompt_tokens))
            n = out.num_scheduled_tokens.get(req.request_id, 0)
            if n:
                if req.num_computed_tokens < req.num_prompt_tokens:
                    snap.prefills.append(rid)
                else:
                    snap.decoders.append(rid)
        return snap


class TempoKVScheduler(_Snapshots, Scheduler):
    pass


class TempoKVAsyncScheduler(_Snapshots, AsyncScheduler):
    pass
