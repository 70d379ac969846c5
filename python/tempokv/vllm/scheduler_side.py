"""The connector's scheduler side: keys and lookups at queue time, loads and saves per step.

Runs on vLLM's engine thread, which waits on tempokvd only within a small budget (the
``SchedulerAgent`` makes the calls). A request's chunk keys are computed and its hit looked up
and claimed when it is *queued* (``on_new_request``), so the daemon has the whole queue time as
lead. ``get_num_new_matched_tokens`` answers from the published lookup; while it is pending it
waits for it up to ``lookup_wait_s`` per ``schedule()`` in all (a local lookup takes about a
millisecond, a step tens: without the wait a request that arrives just before ``schedule()``
loses a whole step), then answers ``(None, False)`` (vLLM asks again next step). A wait that runs
out turns waiting off for ``LOOKUP_WAIT_BACKOFF_S``, so a daemon that hangs costs the engine at
most one budget, not one per step. A hit is the claimed tokens beyond what vLLM already has,
always as an asynchronous load (the request waits in WAITING_FOR_REMOTE_KVS until the worker
has copied or failed).

A definite miss waits for nothing: when the daemon's filter of stored keys (``tempokv.key_filter``,
mapped by the agent) says the first chunk's object of some rank is not stored, the request is
queued for the daemon without a lookup and ``get_num_new_matched_tokens`` answers 0 at once.

Keys (``identity.py``): a chunk's chain hash folds in the request's extras (LoRA adapter, cache
salt, multimodal items); its key's model id is a rank's. With several ranks (tensor or pipeline
parallel) the lookup asks for every rank's object of every chunk, a chunk is a hit only when
all of them are stored, and the claim's manifest lists them chunk by chunk, rank by rank: one
claim, staged once, from which each worker copies its own rank's objects.
"""

import logging
import time
from dataclasses import dataclass

from ..keys import RequestIds, chunk_keys
from .identity import Unkeyable, request_extras
from .internals import local_prefix_tokens
from .metadata import LoadSpec, SaveSpec, TempoKVMetadata

__all__ = ["ConnectorScheduler"]

log = logging.getLogger("tempokv.vllm")

_MAX_SAVING = 1 << 20  # chunks remembered as saved by this engine
LOOKUP_WAIT_BACKOFF_S = 1.0  # no waiting for lookups this long after a wait ran out


@dataclass
class _Req:
    rid: int
    hashes: list  # chain hash of every whole prompt chunk
    prompt_tokens: int
    usable: int  # leading chunks that may be loaded (end before the last prompt token)
    request: object = None  # vLLM's Request
    first_chunk: int = 0  # chunks vLLM's own prefix cache held when queued: not looked up
    next_save: int = 0  # first chunk not yet handed to the worker for saving
    saves: int = 0  # save specs issued (the worker reports finished_sending iff > 0)
    loaded_chunks: int = 0  # chunks a load was planned for
    load_reported: bool = False  # that load is in a finished_recving vLLM has processed
    max_output_tokens: int = 0  # the generation limit it was queued with (0: none given)
    preemptions: int = 0  # preemptions it was queued again for
    preemptions_seen: int = 0  # preemptions a step's output listed


class ConnectorScheduler:
    def __init__(self, agent, model_ids, chunk_tokens, block_size, ids=None, lookup_wait_s=0.0):
        """``model_ids``: every rank's model id, in ``Rank.index`` order; ``lookup_wait_s``: how
        long one ``schedule()`` may wait in all for pending lookups (0: never)."""
        if lookup_wait_s < 0:
            raise ValueError(f"lookup_wait_s must be >= 0, got {lookup_wait_s!r}")
        if chunk_tokens % block_size:
            raise ValueError(f"chunk_tokens {chunk_tokens} is not a multiple of vLLM's block "
                             f"size {block_size}")
        self.agent = agent
        self.lookup_wait_s = lookup_wait_s
        self._wait_left = lookup_wait_s  # of this schedule()'s budget
        self._no_wait_until = 0.0  # after a wait ran out
        self.lookup_waits = 0  # lookups waited for (observability)
        self.lookup_wait_timeouts = 0  # of those, waits that ran out
        self.model_ids = list(model_ids)
        self.ranks = len(self.model_ids)
        self.chunk_tokens = chunk_tokens
        self.block_size = block_size
        self.blocks_per_chunk = chunk_tokens // block_size
        self.ids = ids or RequestIds()
        self.reqs = {}  # vLLM id -> _Req
        self.requeued = 0  # preempted requests queued again (a new lookup and claim each)
        self.cancelled_claims = 0  # claims vLLM's own prefix cache made useless by schedule time
        self.hit_tokens = 0  # tokens vLLM allocated blocks to load (its external hit)
        self.filtered_misses = 0  # queueings the key filter answered as misses (no lookup)
        self.events = []  # vLLM KV cache events (BlockStored) not yet taken
        self._stored = {}  # req_id -> BlockStored of its saves, sent once they are copied out
        # False: requests queued meanwhile are ignored (a driver's baseline without the
        # connector on the same engine).
        self.enabled = True
        self._loads = []  # planned this step, go out with the next metadata
        self._freed_by_load = set()  # finished with a load outstanding, for the next metadata
        self._saving = set()  # chunk hashes handed to the workers for saving (bounded below)
        self._saving_instance = None  # the daemon instance they were saved to
        self.kv_cache_manager = None  # bound by the connector (bind_kv_cache_manager)

    def on_new_request(self, request):
        if not self.enabled:
            return  # unknown to the connector: computed, never loaded or saved
        try:
            extras = request_extras(request)
        except Unkeyable as e:
            log.info("tempokv: %s is neither loaded nor saved: %s", request.request_id, e)
            return
        tokens = list(request.prompt_token_ids or [])
        hashes = [h for _, h in chunk_keys(0, tokens, self.chunk_tokens, extras)]
        usable = (len(tokens) - 1) // self.chunk_tokens if tokens else 0
        rid = self.ids.get(request.request_id)
        max_out = request.sampling_params.max_tokens if request.sampling_params else 0
        st = self.reqs[request.request_id] = _Req(rid, hashes, len(tokens), usable, request,
                                                   max_output_tokens=max_out or 0)
        self._queue(st)

    def _queue(self, st):
        """Looks the request's chunks up and claims the hit, as the request is queued. Chunks
        vLLM's own prefix cache holds now are neither looked up nor claimed (no read, no tier
        space): the lookup starts after them."""
        local = local_prefix_tokens(self.kv_cache_manager, st.request) // self.chunk_tokens
        st.first_chunk = min(local, st.usable)
        limit = min(st.max_output_tokens or 2**32 - 1, 2**32 - 1)  # 0: no limit given
        keys = [(m, h) for h in st.hashes[st.first_chunk:st.usable] for m in self.model_ids]
        if keys and self.agent.absent(keys[:self.ranks]):
            # The first chunk is not stored (for some rank): nothing can be loaded. The daemon
            # still learns of the request (with the next step), without a lookup.
            keys = []
            self.filtered_misses += 1
        self.agent.new_request(st.rid, keys, st.prompt_tokens, limit, self.chunk_tokens,
                               ranks=self.ranks)

    def rid_of(self, req_id):
        st = self.reqs.get(req_id)
        return st.rid if st else None

    def get_num_new_matched_tokens(self, request, num_computed_tokens):
        st = self.reqs.get(request.request_id)
        if st is not None and getattr(request, "num_preemptions", 0) > st.preemptions:
            # Preempted, and asked before a step's output listed it: queued again now.
            self._requeue(request.request_id, st)
        if st is None or st.loaded_chunks:
            # One load per queueing: after a failed load vLLM asks again and recomputes; its
            # claim is gone. (A preempted request is queued again: a new claim, a new load.)
            return 0, False
        lk = self.agent.lookup(st.rid)
        if lk is None:
            return 0, False
        if not lk.done:
            self._wait_for(lk)
        if not lk.done:
            return None, False  # asked again next step
        if not lk.claimed:
            return 0, False
        start = st.first_chunk * self.chunk_tokens
        end = (st.first_chunk + lk.hit_chunks) * self.chunk_tokens
        if not start <= num_computed_tokens < end:
            # vLLM's own cache now holds the whole claim (no read, no tier space for it), or
            # no longer holds what came before it (the load would leave a gap): cancelled.
            self._cancel_claim(st)
            return 0, False
        return end - num_computed_tokens, True

    def _wait_for(self, lk):
        """Waits for a pending lookup within what is left of this schedule()'s budget."""
        now = time.monotonic()
        if self._wait_left <= 0 or now < self._no_wait_until:
            return
        self.lookup_waits += 1
        if not lk.ready.wait(self._wait_left):
            self.lookup_wait_timeouts += 1
            self._no_wait_until = time.monotonic() + LOOKUP_WAIT_BACKOFF_S
        self._wait_left = max(0.0, self._wait_left - (time.monotonic() - now))

    def _cancel_claim(self, st):
        self.agent.preempted(st.rid)  # the daemon forgets the request with its claim
        self.cancelled_claims += 1

    def update_state_after_alloc(self, request, blocks, num_external_tokens):
        if num_external_tokens <= 0:
            return
        st = self.reqs[request.request_id]
        lk = self.agent.lookup(st.rid)
        n = lk.hit_chunks if lk is not None else 0
        first, end = st.first_chunk, st.first_chunk + n
        # vLLM's own (block-aligned) hit, within the claimed chunks [first, end).
        local = end * self.chunk_tokens - num_external_tokens - first * self.chunk_tokens
        if n == 0 or local < 0 or local % self.block_size:
            # Not what get_num_new_matched_tokens offered: refuse rather than guess blocks.
            raise RuntimeError(f"tempokv: {request.request_id}: asked to load "
                               f"{num_external_tokens} tokens, {n} chunks were offered")
        bpc = self.blocks_per_chunk
        block_ids = list(blocks.get_block_ids()[0][first * bpc:end * bpc])
        st.loaded_chunks = n
        self.hit_tokens += num_external_tokens
        st.next_save = max(st.next_save, end)  # those chunks are in the store already
        # ...for any other request too (one vLLM's prefix cache then serves: not saved again).
        self._note_saved(st.hashes[first:end])
        self._loads.append(LoadSpec(request.request_id, st.rid, st.hashes[first:end], block_ids,
                                    local // self.block_size, ranks=self.ranks))

    def build_connector_meta(self, out):
        self._wait_left = self.lookup_wait_s  # called once per schedule(): a new budget
        meta = TempoKVMetadata(loads=self._loads, freed_by_load=self._freed_by_load)
        self._loads, self._freed_by_load = [], set()
        for req_id in out.preempted_req_ids or ():
            st = self.reqs.get(req_id)
            if st is not None:
                st.preemptions_seen += 1
                if st.preemptions_seen > st.preemptions:
                    self._requeue(req_id, st)
            meta.preempted.add(req_id)
        for nr in out.scheduled_new_reqs:
            self._plan_saves(meta, nr.req_id, nr.num_computed_tokens, out)
        cached = out.scheduled_cached_reqs
        for req_id, computed in zip(cached.req_ids, cached.num_computed_tokens):
            self._plan_saves(meta, req_id, computed, out)
        return meta

    def _requeue(self, req_id, st):
        """vLLM preempted the request by recompute: its blocks are freed and it waits again
        (at the front of the queue). Its prefix is still in the store, so it is queued again
        for tempokvd as a new request under a new id (the old one ends: its claim was released
        with its copy, or is cancelled) with a fresh lookup and claim, and loaded again when
        vLLM schedules it. Its chunks handed to the saver stay marked as saved: the
        worker copies those it had not copied yet before vLLM reuses the blocks
        (``handle_preemptions``: ``Saver.flush``)."""
        self.agent.preempted(st.rid)
        self.ids.release(req_id)
        st.rid = self.ids.get(req_id)
        st.loaded_chunks = 0
        st.load_reported = False
        st.preemptions += 1
        self.requeued += 1
        self._queue(st)

    def forget_saved(self):
        """Forgets the chunks saved so far: the daemon now serving the endpoint may not have
        them (another instance, perhaps over another store). Without this an engine would never
        save those chunks again."""
        self._saving.clear()
        self._saving_instance = getattr(self.agent, "daemon_instance", None)

    def _plan_saves(self, meta, req_id, computed, out):
        if getattr(self.agent, "daemon_instance", None) != self._saving_instance:
            self.forget_saved()
        st = self.reqs.get(req_id)
        if st is None or st.next_save >= len(st.hashes):
            return
        done = min(computed + out.num_scheduled_tokens.get(req_id, 0), st.prompt_tokens)
        last = done // self.chunk_tokens
        if last <= st.next_save:
            return
        block_ids = self.kv_cache_manager.get_block_ids(req_id)[0]
        bpc = self.blocks_per_chunk
        for i in range(st.next_save, last):
            if st.hashes[i] in self._saving:
                continue  # another request of this engine saves (or saved) the same chunk
            self._note_saved([st.hashes[i]])
            meta.saves.append(SaveSpec(req_id, st.hashes[i], i * self.chunk_tokens,
                                       (i + 1) * self.chunk_tokens,
                                       list(block_ids[i * bpc:(i + 1) * bpc])))
            st.saves += 1
            self._stored.setdefault(req_id, []).append(self._block_stored(st, i))
        st.next_save = last

    def _note_saved(self, hashes):
        if getattr(self.agent, "daemon_instance", None) != self._saving_instance:
            self.forget_saved()
        if len(self._saving) + len(hashes) > _MAX_SAVING:
            self._saving.clear()  # forgetting only costs a duplicate put
        self._saving.update(hashes)

    def _block_stored(self, st, i):
        from vllm.distributed.kv_events import BlockStored
        c = self.chunk_tokens
        tokens = list(st.request.prompt_token_ids[i * c:(i + 1) * c]) if st.request else []
        return BlockStored(block_hashes=[st.hashes[i]],
                           parent_block_hash=st.hashes[i - 1] if i else None,
                           token_ids=tokens, block_size=c, lora_id=None, medium="tempokv",
                           lora_name=None)

    def on_finished_sending(self, req_ids):
        """Saves copied out: vLLM's KV events say those chunks are stored (``take_events``)."""
        for req_id in req_ids or ():
            self.events.extend(self._stored.pop(req_id, ()))

    def on_finished_recving(self, req_ids):
        """vLLM's view of the loads (``update_connector_output``): those it has seen finish."""
        for req_id in req_ids or ():
            st = self.reqs.get(req_id)
            if st is not None and st.loaded_chunks:
                st.load_reported = True

    def request_finished(self, request):
        """Whether the worker holds the blocks (saves issued): then it reports the request in
        ``finished_sending`` once they are copied out.

        A request finished while its load is outstanding (aborted in WAITING_FOR_REMOTE_KVS,
        perhaps queued again after a preemption that had saves) is different: vLLM holds its
        blocks until the load's ``finished_recving`` and frees them then, so a
        ``finished_sending`` as well would name a request vLLM has dropped (its scheduler
        asserts). Its saves were copied out at the preemption (``Saver.flush``) and none was
        planned since (it never ran again), so it is freed by its load alone: False here,
        and the worker is told not to report it (``freed_by_load``)."""
        st = self.reqs.pop(request.request_id, None)
        if st is None:
            return False
        self.agent.finished(st.rid, request.num_output_tokens)
        self.ids.release(request.request_id)
        if st.loaded_chunks and not st.load_reported:
            if st.saves:
                self._freed_by_load.add(request.request_id)
            self.on_finished_sending([request.request_id])  # copied out at its preemption
            return False
        return st.saves > 0
