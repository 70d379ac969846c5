"""StepReporter: the one place that turns vLLM's scheduler state into tempokvd's adapter calls.

Today it speaks protocol v1 (one request per call: update_order, iteration_started, admitted,
prefill_done, tokens_generated, finished). When the service's ``step`` op lands, ``step`` becomes
one message; nothing else in the connector changes.

``Snapshot`` is what ``TempoKVScheduler`` hands over after each ``schedule()``: bounded (at most
``MAX_WAITING`` waiting and ``max_num_seqs`` running entries), plain data, no vLLM objects.
"""

from dataclasses import dataclass, field

__all__ = ["Snapshot", "StepReporter", "MAX_WAITING"]

MAX_WAITING = 256  # the waiting order beyond this is not worth a projection


@dataclass
class Snapshot:
    waiting: list = field(default_factory=list)  # [(rid, prompt_tokens)] in scheduling order
    # [(rid, computed, generated, prompt_tokens)]: running, and waiting for their KV to load
    running: list = field(default_factory=list)
    prefills: list = field(default_factory=list)  # rids whose prefill tokens run this step
    decoders: list = field(default_factory=list)  # rids decoding a token this step
    token_budget: int = 0  # max_num_batched_tokens
    max_num_seqs: int = 0
    chunked_prefill: bool = True
    last_step_s: float = 0.0  # measured duration of the previous step (0 before the first)
    step_estimate_s: float = 0.0  # smoothed measured step duration: the boundary of this step


class StepReporter:
    """Sends one step's snapshot to tempokvd, tracking per request what was already said.

    Only requests the daemon knows (``known``: added in this session) are mentioned. A request
    is admitted once: from then on (loading its KV, running, or back in vLLM's queue after a
    failed load or a preemption, which the adapter has no call for) it is left out of the
    waiting order, which the adapter keeps for requests not yet admitted.
    """

    def __init__(self, client):
        self.client = client
        self._admitted = set()
        self._prefilled = set()
        self._generated = {}

    def step(self, snap, known):
        c = self.client
        waiting = [rid for rid, _ in snap.waiting if rid in known and rid not in self._admitted]
        c.update_order(waiting, boundary_in_ns=int(snap.step_estimate_s * 1e9))
        for rid, computed, generated, prompt in snap.running:
            if rid not in known:
                continue
            if rid not in self._admitted:
                self._admitted.add(rid)
                c.admitted(rid)
            if generated > 0 and rid not in self._prefilled:
                self._prefilled.add(rid)
                c.prefill_done(rid)
            if generated > self._generated.get(rid, 0):
                self._generated[rid] = generated
                c.tokens_generated(rid, generated)
        prefills = [r for r in snap.prefills if r in known]
        decoders = [r for r in snap.decoders if r in known]
        if prefills or decoders:
            c.iteration_started(prefills, decoders)

    def finished(self, rid, output_tokens):
        self._admitted.discard(rid)
        self._prefilled.discard(rid)
        self._generated.pop(rid, None)
        self.client.finished(rid, output_tokens)
