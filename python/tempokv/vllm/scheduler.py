"""TempoKVScheduler / TempoKVAsyncScheduler: vLLM's Scheduler / AsyncScheduler, plus a bounded
snapshot for the connector after each step.

The connector cannot see vLLM's waiting queue, so this subclass (``scheduler_cls``) hands it,
after every ``schedule()``: the waiting order with prompt lengths (at most ``MAX_WAITING``), the
running requests' computed and generated tokens, which of them prefill or decode in this step,
the token budget, the sequence limit, the chunked-prefill setting, and the measured duration
of the iterations whose output arrived since (``schedule()`` return, or the previous output if
later, to ``update_from_output()``: with async scheduling the next step is scheduled before
the previous one's output arrives). Scheduling itself is vLLM's, unchanged. Use the async variant where vLLM schedules
asynchronously (its default when nothing prevents it): a plain Scheduler subclass turns that off.
"""

import time

from vllm.v1.core.sched.async_scheduler import AsyncScheduler
from vllm.v1.core.sched.scheduler import Scheduler

from .connector import TempoKVConnector
from .reporter import MAX_WAITING, Snapshot

__all__ = ["TempoKVScheduler", "TempoKVAsyncScheduler"]

IDLE_YIELD_S = 0.001  # as vLLM's EngineCore busy loop after a step that executed nothing


class _Snapshots:
    """The mixin: wraps schedule() and update_from_output() of a vLLM scheduler class.

    Each schedule() that computes tokens is an iteration, numbered here; its output
    (update_from_output, one per schedule(), in order) ends it. It is measured from when it
    could start (its schedule() returned, or the previous output arrived: an asynchronous
    scheduler schedules step k+1 before step k's output) to its output: the forward pass,
    never an idle gap. The next snapshot carries the measurement with the iteration's
    number, so the daemon pairs it with the batch it measured."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._tempokv = self.connector if isinstance(self.connector, TempoKVConnector) else None
        self._iterations = 0
        self._scheduled = {}  # id(SchedulerOutput) -> (iteration, when schedule() returned)
        self._last_output = 0.0
        self._measured = []  # [(iteration, seconds)] for the next snapshot
        self._last_posted = None  # (waiting, running) of the last snapshot handed over
        self.last_step_s = 0.0
        self.step_estimate_s = 0.0
        self.idle_yields = 0  # idle steps after which schedule() slept (_idle_yield)

    def schedule(self, *args, **kwargs):
        out = super().schedule(*args, **kwargs)
        iteration = 0
        if out.total_num_scheduled_tokens > 0:
            self._iterations += 1
            iteration = self._iterations
        if self._tempokv is not None:
            snap = self._snapshot(out, iteration)
            # A step that schedules nothing, measured nothing and leaves the queues as they
            # were (the engine spinning while requests wait for their KV to load: thousands of
            # steps a second) says nothing new; handing each over flooded the agent, which then
            # answered lookups seconds late.
            key = (tuple(snap.waiting), tuple(r[0] for r in snap.running))
            if iteration or self._measured or key != self._last_posted:
                self._last_posted = key
                self._tempokv.on_schedule(snap)
                self._measured = []
        else:
            self._measured = []
        if (out.total_num_scheduled_tokens == 0 and not self.running
                and len(getattr(self, "kv_holding_waiting", ())) > 0):
            self._idle_yield()
        self._scheduled[id(out)] = (iteration, time.monotonic())
        return out

    def _idle_yield(self):
        """Nothing runs and every request waits for its KV: the engine would step again at once,
        and an engine thread spinning in Python takes the GIL back from the connector's loader
        thread after each of its copies' torch calls (each releases it, and getting it back
        waits out the holder's 5 ms switch interval), so one load's copy took seconds and
        pass 2 of the e2e check was no faster than recompute (measured: 8.5 s for a copy of
        0.1 s). vLLM's own EngineCore loop sleeps 1 ms after such a step; engines stepped
        in-process (``LLM`` with VLLM_ENABLE_V1_MULTIPROCESSING=0, the checks' drivers) do
        not, so the scheduler yields here too (1 ms more per idle step in EngineCore)."""
        self.idle_yields += 1
        time.sleep(IDLE_YIELD_S)

    def update_from_output(self, scheduler_output, *args, **kwargs):
        now = time.monotonic()
        iteration, scheduled = self._scheduled.pop(id(scheduler_output), (0, now))
        if iteration:
            self.last_step_s = now - max(scheduled, self._last_output)
            a = 0.3  # smoothing of the measured step time
            self.step_estimate_s = (self.last_step_s if self.step_estimate_s == 0 else
                                    a * self.last_step_s + (1 - a) * self.step_estimate_s)
            self._measured.append((iteration, self.last_step_s))
        self._last_output = now
        return super().update_from_output(scheduler_output, *args, **kwargs)

    def _snapshot(self, out, iteration):
        c = self._tempokv
        snap = Snapshot(token_budget=self.scheduler_config.max_num_batched_tokens,
                        max_num_seqs=self.scheduler_config.max_num_seqs,
                        chunked_prefill=bool(self.scheduler_config.enable_chunked_prefill),
                        last_step_s=self.last_step_s, step_estimate_s=self.step_estimate_s,
                        iteration=iteration, measured=list(self._measured))
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
                # schedule() has already added this step's tokens to num_computed_tokens.
                before = req.num_computed_tokens - n
                if before < req.num_prompt_tokens:
                    snap.prefills.append((rid, min(n, req.num_prompt_tokens - before)))
                else:
                    snap.decoders.append(rid)
        return snap


class TempoKVScheduler(_Snapshots, Scheduler):
    pass


class TempoKVAsyncScheduler(_Snapshots, AsyncScheduler):
    pass
