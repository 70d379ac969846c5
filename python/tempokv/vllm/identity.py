"""What a chunk's KV depends on, and so what its key must name (DESIGN.md §9).

* The **model descriptor** (``model_descriptor``): the model, vLLM's version, the model and KV
  dtypes, the device, the configured attention backend, each KV cache group's spec (block size,
  KV heads, head size, dtype, sliding window, ...), and the rank: tensor-parallel rank and size,
  pipeline stage and count. Its XXH3 is the key's model id, so two engines share an object only
  when every one of these agrees: a store that outlives an upgrade, a dtype or a layout change,
  or a rank of another shard, never serves same-sized bytes of another kind.
* The **request's extras** (``request_extras``): its LoRA adapter (name and path), its
  ``cache_salt`` and its multimodal items (identifier and placeholder position), folded into the
  token chain (``tempokv.keys.ChunkExtras``); tenants that asked for isolation with a salt
  never share KV.

The scheduler process computes every rank's model id (``rank_model_ids``): a hit needs each
rank's object, and a claim's manifest lists them chunk by chunk, rank by rank
(``LoadSpec``). Each worker saves and loads under its own rank's id only. What the scheduler
cannot know (the worker's tensor shapes and layer order) is the object header's layout digest
(``header.py``), checked at load.
"""

import dataclasses
from dataclasses import dataclass

from ..keys import ChunkExtras, model_id

__all__ = ["Rank", "ranks_of", "worker_rank", "model_descriptor", "rank_model_ids",
           "request_extras", "Unkeyable", "WorkerIdentity"]


class Unkeyable(Exception):
    """A request whose KV its tokens cannot name (prompt embeddings): never loaded or saved."""


@dataclass(frozen=True)
class Rank:
    tp_rank: int = 0
    tp_size: int = 1
    pp_rank: int = 0
    pp_size: int = 1

    @property
    def index(self):
        """Its place among ``ranks_of``: the order of a claim's objects within a chunk."""
        return self.pp_rank * self.tp_size + self.tp_rank

    @property
    def world(self):
        return self.tp_size * self.pp_size


def _sizes(parallel_config):
    tp = int(getattr(parallel_config, "tensor_parallel_size", 1) or 1)
    pp = int(getattr(parallel_config, "pipeline_parallel_size", 1) or 1)
    for name in ("decode_context_parallel_size", "prefill_context_parallel_size"):
        if int(getattr(parallel_config, name, 1) or 1) > 1:
            # The KV of one block is then split by token across ranks the key does not name.
            raise ValueError(f"TempoKVConnector: {name} > 1 is not supported")
    return tp, pp


def ranks_of(parallel_config):
    """Every rank of the engine, in ``Rank.index`` order."""
    tp, pp = _sizes(parallel_config)
    return [Rank(t, tp, p, pp) for p in range(pp) for t in range(tp)]


def worker_rank(parallel_config):
    """This worker's rank, from vLLM's process groups. With one rank and no groups (a worker
    built outside vLLM's executor) it is rank 0; with several, a rank that cannot be read is an
    error, never a guess (a guess of 0 is how every rank once loaded rank 0's shard)."""
    tp, pp = _sizes(parallel_config)
    if tp * pp == 1:
        return Rank()
    from vllm.distributed.parallel_state import get_pp_group, get_tensor_model_parallel_rank
    return Rank(int(get_tensor_model_parallel_rank()), tp, int(get_pp_group().rank_in_group), pp)


def _spec_text(spec):
    """A KV cache spec's fields (all of them: any that changes the bytes changes the key)."""
    specs = getattr(spec, "kv_cache_specs", None)
    if isinstance(specs, dict) and specs:  # UniformTypeKVCacheSpecs: the scheduler takes one
        spec = next(iter(specs.values()))
    if dataclasses.is_dataclass(spec):
        fields = ",".join(f"{f.name}={getattr(spec, f.name)}" for f in dataclasses.fields(spec))
    else:
        fields = repr(spec)
    return f"{type(spec).__name__}({fields})"


def model_descriptor(vllm_config, kv_cache_config, device_type, rank):
    """The string whose XXH3 is the model id of ``rank``'s objects: the same in the scheduler
    and in that rank's worker (both see the same configs; vLLM gives the scheduler worker 0's
    KV cache config, equal to every worker's but for layer names, which are left out)."""
    import vllm

    mc = vllm_config.model_config
    cc = vllm_config.cache_config
    ac = getattr(vllm_config, "attention_config", None)
    backend = getattr(ac, "backend", None)
    parts = [str(mc.model), f"rev={getattr(mc, 'revision', None)}", f"vllm={vllm.__version__}",
             f"dtype={mc.dtype}", f"quant={getattr(mc, 'quantization', None)}",
             f"kv_dtype={cc.cache_dtype}", f"dev={device_type}",
             f"attn={getattr(backend, 'name', backend) or 'auto'}",
             f"kv_layout={getattr(kv_cache_config, 'kv_cache_layout', None)}",
             f"tp={rank.tp_rank}/{rank.tp_size}", f"pp={rank.pp_rank}/{rank.pp_size}"]
    parts += [_spec_text(g.kv_cache_spec) for g in kv_cache_config.kv_cache_groups]
    return "|".join(parts)


def rank_model_ids(vllm_config, kv_cache_config, device_type):
    """Every rank's model id, in ``Rank.index`` order (the scheduler's keys)."""
    return [model_id(model_descriptor(vllm_config, kv_cache_config, device_type, r))
            for r in ranks_of(vllm_config.parallel_config)]


def request_extras(request):
    """The request's ``ChunkExtras``. Raises ``Unkeyable`` for prompt embeddings (their token
    ids are placeholders: equal ids, different KV)."""
    if getattr(request, "prompt_embeds", None) is not None:
        raise Unkeyable("prompt embeddings")
    whole = []
    lora = getattr(request, "lora_request", None)
    if lora:
        whole.append(["lora", str(lora.lora_name), str(getattr(lora, "lora_path", "") or "")])
    salt = getattr(request, "cache_salt", None)
    if salt:
        whole.append(["cache_salt", str(salt)])
    items = []
    for f in getattr(request, "mm_features", None) or ():
        ident = getattr(f, "identifier", None) or getattr(f, "mm_hash", None)
        if ident is None:
            raise Unkeyable("a multimodal item without an identifier")
        pos = f.mm_position
        items.append((pos.offset, pos.length, ident))
    return ChunkExtras(whole, items)


@dataclass(frozen=True)
class WorkerIdentity:
    """A worker's part of every key and header: its rank's model id, its rank, and the digest
    of its KV layout (``header.layout_digest``)."""
    model_id: int
    rank: Rank
    layout_digest: int

    def key(self, chunk_hash):
        return (self.model_id, chunk_hash)
