"""A SKELETON of a vLLM KV connector on TempoKV: not a working vLLM integration.

It does not import vLLM. It mirrors the shape of vLLM's ``KVConnectorBase_V1``
(vllm/distributed/kv_transfer/kv_connector/v1/base.py), which is split into a
scheduler side (one per engine, in the scheduler process) and a worker side
(one per tensor-parallel rank), and shows which TempoKV call belongs in which
hook, in the right order. Requests, scheduler steps and the KV cache are
stood in for by small dataclasses and ``bytearray`` buffers; an integrator
replaces them with vLLM's ``Request``, ``SchedulerOutput`` and paged GPU KV
blocks (copying from the tier mapping with ``cudaMemcpyAsync`` from a
``cudaHostRegister``-ed mapping instead of a Python slice copy).

KV objects and keys: a prompt is cut into chunks of ``chunk_tokens`` tokens
(only full chunks are stored). A chunk's key is (model id, chained prefix
hash), like ``tempokv::Key`` (include/tempokv/key.h): the model id is a
64-bit hash of the model name, the chunk hash a 64-bit hash of the previous
chunk's hash followed by the chunk's token ids, so equal prefixes of the same
model give equal keys. Here both hashes are BLAKE2b with an 8-byte digest
(the standard library has no XXH3), so these keys are NOT the keys
``tempokv::model_id`` / ``tempokv::chain_hash`` compute: runtimes that share a
store must use the same hashing. A chunk's payload is the chunk's slice of
every layer's KV, layer after layer, in the order ``save_kv_layer`` saw the
layers.

The flow (one engine; scheduler and workers each hold their own
:class:`TempoKVClient`, joined to the same ``runtime`` so that every rank can
retrieve the claims the scheduler reports):

scheduler, each step
    ``get_num_new_matched_tokens``: ``lookup`` the prompt's chunk keys, count
    the leading chunks present in the store.
    ``update_state_after_alloc``: ``add_request``; ``report_hit`` with the
    manifest of the matched chunks (a PLANNED claim).
    ``build_connector_meta``: ``admitted`` for the requests scheduled now,
    ``update_order`` with the waiting queue, ``iteration_started``; the
    metadata (loads, saves) goes to the workers.
    ``update_after_step``: ``prefill_done`` / ``tokens_generated``.
    ``request_finished``: ``finished``.
worker, each forward pass
    ``start_load_kv``: for each load, ``request_retrieval`` (on "wait",
    ``poll`` until the ready notification), ``begin_transfer``, copy each
    object from the tier mapping, ``end_transfer``.
    ``wait_for_layer_load``: nothing (see there).
    ``save_kv_layer`` / ``wait_for_save``: ``put`` the newly computed chunks
    through the write region.

Known gaps an integrator must close (kept out on purpose):
* Lead time. vLLM calls ``update_state_after_alloc`` when it schedules the
  request, so the claim is reported just before its retrieval and TempoKV can
  only take the ordinary path or stage with no slack. To let TempoKV stage
  ahead, report the hit (add_request + report_hit) as soon as the request is
  queued, and keep ``update_order`` fed with the real waiting queue.
* Load failures. A claim that fails (an error notification) leaves its
  tokens uncomputed; vLLM must recompute them (newer vLLM versions have
  ``get_block_ids_with_load_errors``). Here they are only recorded in
  ``failed_loads``.
* Tensor parallelism. Open every rank's client with ``ranks=<TP size>`` (the
  runtime's claims then end only when that many ranks have copied them, or
  every live rank if some died); without it, every rank must call
  ``request_retrieval`` before any rank's ``end_transfer``.
* Asynchronous loads/saves, progressive release (``object_transferred``),
  and vLLM's string request ids (map them to unique 64-bit ids).

Threading: like the client, not thread-safe.
"""

import hashlib
import struct
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from .client import TempoKVClient
from .errors import TempoKVError

__all__ = [
    "ConnectorConfig",
    "Request",
    "SchedulerStep",
    "ChunkSpec",
    "LoadSpec",
    "SaveSpec",
    "TempoKVConnectorMetadata",
    "TempoKVSchedulerConnector",
    "TempoKVWorkerConnector",
    "model_id",
    "chunk_hashes",
]

Key = Tuple[int, int]


# ------------------------------------------------------------------------------------------------
# Keys.

def _hash64(data: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def model_id(model_name: str) -> int:
    """The 64-bit model id of a model name."""
    return _hash64(model_name.encode("utf-8"))


def chunk_hashes(token_ids: Sequence[int], chunk_tokens: int) -> List[int]:
    """The chained prefix hash of each full chunk of ``token_ids`` (the first chained on 0)."""
    out = []
    prev = 0
    for start in range(0, len(token_ids) - chunk_tokens + 1, chunk_tokens):
        chunk = token_ids[start:start + chunk_tokens]
        prev = _hash64(struct.pack("<Q", prev) + struct.pack(f"<{len(chunk)}I", *chunk))
        out.append(prev)
    return out


# ------------------------------------------------------------------------------------------------
# Stand-ins for vLLM's types and the connector metadata.

@dataclass
class ConnectorConfig:
    model_name: str
    chunk_tokens: int = 256  # tokens per KV object (a multiple of vLLM's block size)
    load_timeout_s: float = 30.0  # longest wait for a claim's ready notification


@dataclass
class Request:
    """Stand-in for vllm.v1.request.Request."""
    request_id: int  # a unique 64-bit id (vLLM's are strings: map them)
    prompt_token_ids: List[int]
    max_tokens: int


@dataclass
class SchedulerStep:
    """Stand-in for vLLM's SchedulerOutput, with what TempoKV needs of one step."""
    waiting: List[int] = field(default_factory=list)  # still waiting, first to be scheduled first
    scheduled_new: List[int] = field(default_factory=list)  # admitted now: they prefill this step
    decoding: List[int] = field(default_factory=list)  # running: one more token this step
    boundary_in_ns: int = 0  # time until the step now running ends


@dataclass
class ChunkSpec:
    key: Key
    first_token: int
    end_token: int
    nbytes: int = 0  # payload bytes in the store (loads); 0 for chunks still to save


@dataclass
class LoadSpec:
    request_id: int
    chunks: List[ChunkSpec]  # the matched prefix, in retrieval (manifest) order


@dataclass
class SaveSpec:
    request_id: int
    num_prompt_tokens: int
    chunks: List[ChunkSpec]  # full chunks past the matched prefix: computed by this step


@dataclass
class TempoKVConnectorMetadata:
    """What the scheduler side hands the workers for one step (vLLM's KVConnectorMetadata)."""
    loads: List[LoadSpec] = field(default_factory=list)
    saves: List[SaveSpec] = field(default_factory=list)


# ------------------------------------------------------------------------------------------------
# Scheduler side.

class TempoKVSchedulerConnector:
    """The scheduler side: matches prefixes, reports claims and the scheduling order."""

    def __init__(self, client: TempoKVClient, config: ConnectorConfig):
        self.client = client
        self.config = config
        self.model = model_id(config.model_name)
        self._matched: Dict[int, List[ChunkSpec]] = {}  # from get_num_new_matched_tokens
        self._known: Dict[int, bool] = {}  # request ids the daemon knows -> admitted yet
        self._pending = TempoKVConnectorMetadata()

    def _chunks(self, token_ids: Sequence[int], count: int) -> List[ChunkSpec]:
        n = self.config.chunk_tokens
        hashes = chunk_hashes(token_ids, n)[:count]
        return [ChunkSpec((self.model, h), i * n, (i + 1) * n) for i, h in enumerate(hashes)]

    def get_num_new_matched_tokens(self, request: Request,
                                   num_computed_tokens: int) -> Tuple[int, bool]:
        """(tokens beyond num_computed_tokens that TempoKV can load, load asynchronously?)."""
        prompt = request.prompt_token_ids
        # vLLM must compute at least the prompt's last token: never match the whole prompt.
        candidates = self._chunks(prompt, (len(prompt) - 1) // self.config.chunk_tokens)
        matched: List[ChunkSpec] = []
        if candidates:
            sizes = self.client.lookup([c.key for c in candidates])
            for chunk, size in zip(candidates, sizes):
                if size == 0:
                    break
                chunk.nbytes = size
                matched.append(chunk)
        self._matched[request.request_id] = matched
        matched_tokens = len(matched) * self.config.chunk_tokens
        # False: start_load_kv loads synchronously, before the forward pass.
        return max(0, matched_tokens - num_computed_tokens), False

    def update_state_after_alloc(self, request: Request, blocks=None,
                                 num_external_tokens: int = 0) -> None:
        """The request got its KV blocks (it is scheduled): tell TempoKV about it and its hit."""
        rid = request.request_id
        in_store = self._matched.pop(rid, [])  # the leading chunks the store holds
        matched = in_store if num_external_tokens > 0 else []
        if matched:
            # Chunks vLLM holds already (its own prefix cache) are not loaded again.
            computed = matched[-1].end_token - num_external_tokens
            matched = [c for c in matched if c.end_token > computed]
        prompt = request.prompt_token_ids
        self.client.add_request(rid, len(prompt),
                                sum(c.end_token - c.first_token for c in matched),
                                sum(c.nbytes for c in matched), request.max_tokens)
        self._known[rid] = False
        if matched:
            self.client.report_hit(rid, [(c.key[0], c.key[1], c.nbytes) for c in matched])
            self._pending.loads.append(LoadSpec(rid, matched))
        # The full chunks past the store's match are computed by this request: save them.
        to_save = self._chunks(prompt, len(prompt) // self.config.chunk_tokens)[len(in_store):]
        if to_save:
            self._pending.saves.append(SaveSpec(rid, len(prompt), to_save))

    def build_connector_meta(self, step: SchedulerStep) -> TempoKVConnectorMetadata:
        """After the scheduler built a step: progress and order to TempoKV, metadata to workers."""
        new = [r for r in step.scheduled_new if r in self._known]
        for rid in new:
            if not self._known[rid]:
                self.client.admitted(rid)
                self._known[rid] = True
        # Only ids the daemon knows and that still wait (see the module's "Lead time").
        waiting = [r for r in step.waiting if self._known.get(r) is False]
        self.client.update_order(waiting, step.boundary_in_ns)
        decoding = [r for r in step.decoding if self._known.get(r)]
        self.client.iteration_started(new, decoding)
        meta, self._pending = self._pending, TempoKVConnectorMetadata()
        return meta

    def update_after_step(self, prefills_done: Sequence[int] = (),
                          tokens_generated: Optional[Dict[int, int]] = None) -> None:
        """After a step's output (vLLM's update_from_output): progress for the TTU projection."""
        for rid in prefills_done:
            if self._known.get(rid):
                self.client.prefill_done(rid)
        for rid, total in (tokens_generated or {}).items():
            if self._known.get(rid):
                self.client.tokens_generated(rid, total)

    def request_finished(self, request: Request, block_ids=None,
                         output_tokens: int = 0) -> Tuple[bool, Optional[dict]]:
        """(delay freeing the blocks?, kv_transfer_params): saves are synchronous, so no delay."""
        rid = request.request_id
        self._matched.pop(rid, None)
        if self._known.pop(rid, None) is not None:
            self.client.finished(rid, output_tokens)
        return False, None


# ------------------------------------------------------------------------------------------------
# Worker side.

class TempoKVWorkerConnector:
    """The worker side (one per rank): loads claims from the tier, saves new chunks."""

    def __init__(self, client: TempoKVClient, config: ConnectorConfig):
        self.client = client
        self.config = config
        self._meta: Optional[TempoKVConnectorMetadata] = None
        self.kv_caches = None
        # Stand-in for the paged KV cache: each loaded request's matched prefix, the chunks'
        # payloads back to back in manifest order.
        self.loaded_kv: Dict[int, bytearray] = {}
        self.failed_loads: Dict[int, TempoKVError] = {}
        self.failed_saves: Dict[Key, TempoKVError] = {}
        self._layers: Dict[int, Dict[str, bytes]] = {}  # request -> layer -> KV of its prompt

    def register_kv_caches(self, kv_caches) -> None:
        # A real worker keeps vLLM's KV tensors here, and registers the tier mapping
        # (client.tier) with CUDA once so copies from it are DMA.
        self.kv_caches = kv_caches

    def bind_connector_metadata(self, meta: TempoKVConnectorMetadata) -> None:
        self._meta = meta

    def clear_connector_metadata(self) -> None:
        self._meta = None

    def start_load_kv(self, forward_context=None, **kwargs) -> None:
        """Loads every claim of this step before the forward pass (synchronously)."""
        for load in (self._meta.loads if self._meta else []):
            try:
                self._load(load)
            except TempoKVError as e:
                # Its tokens must be recomputed (see the module's "Load failures").
                self.failed_loads[load.request_id] = e

    def _load(self, load: LoadSpec) -> None:
        rid = load.request_id
        outcome = []
        answer = self.client.request_retrieval(
            rid, on_ready=lambda _rid, path, error: outcome.append((path, error)))
        if answer == "wait":
            deadline = time.monotonic() + self.config.load_timeout_s
            while not outcome:
                if time.monotonic() >= deadline:
                    self.client.cancel(rid)
                    raise TempoKVError("Unavailable", f"request {rid}: no ready notification "
                                                      f"within {self.config.load_timeout_s} s")
                self.client.poll(0.05)  # runs the callback once the notification is here
            path, error = outcome[0]
            if error is not None:
                raise error  # the daemon released the failed claim
        spans = self.client.objects(rid)  # one (offset, bytes) per chunk, in manifest order
        dest = bytearray(sum(n for _, n in spans))
        self.client.begin_transfer(rid)
        try:
            pos = 0
            for (offset, nbytes), chunk in zip(spans, load.chunks):
                # The real copy: cudaMemcpyAsync(tier + offset -> the chunk's KV blocks). The
                # bytes stay put and unchanged until end_transfer.
                dest[pos:pos + nbytes] = self.client.read_object(offset, nbytes)
                pos += nbytes
        finally:
            self.client.end_transfer(rid)
        self.loaded_kv[rid] = dest

    def wait_for_layer_load(self, layer_name: str) -> None:
        # Nothing to wait for: start_load_kv copied every layer of every chunk already (an object
        # holds all layers of its chunk). A layer-pipelined integration would store one object
        # per (chunk, layer) and wait here for that layer's copies.
        return None

    def save_kv_layer(self, layer_name: str, kv_layer, attn_metadata=None, **kwargs) -> None:
        """``kv_layer``: {request_id: this layer's KV of the request's prompt tokens, bytes-like,
        token-major, the same bytes per token for every token}. Kept until wait_for_save()."""
        saving = {s.request_id for s in (self._meta.saves if self._meta else [])}
        for rid, kv in kv_layer.items():
            if rid in saving:
                self._layers.setdefault(rid, {})[layer_name] = bytes(kv)

    def wait_for_save(self) -> None:
        """Puts each new chunk (every layer's slice of it) through the write region. Best effort:
        a failed put only loses a future hit, so it is recorded, not raised."""
        for save in (self._meta.saves if self._meta else []):
            layers = self._layers.pop(save.request_id, None)
            if not layers:
                continue
            for chunk in save.chunks:
                parts = []
                for kv in layers.values():
                    per_token = len(kv) // save.num_prompt_tokens
                    parts.append(kv[chunk.first_token * per_token:chunk.end_token * per_token])
                try:
                    self.client.put(chunk.key, chunk.first_token, chunk.end_token, b"".join(parts))
                except TempoKVError as e:
                    self.failed_saves[chunk.key] = e

    def get_finished(self, finished_req_ids=()) -> Tuple[set, set]:
        """(requests done saving, requests done loading) asynchronously: none, both are
        synchronous here."""
        return set(), set()
