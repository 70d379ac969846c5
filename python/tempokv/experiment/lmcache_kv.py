"""LMCache's KV connector for vLLM's CPU backend: paged KV <-> LMCache memory objects.

LMCache 0.5.6 moves KV between vLLM's paged cache and its memory objects with a compiled CUDA
kernel; on the CPU device it has no connector (``CreateGPUConnector``: "No supported cpu
connector found") and vLLM runs every request as a recompute. ``PagedCPUKV`` is that copy in
plain torch indexing, for the experiment's ``lmcache`` policy (``lmcache_adapter``): a gather
of a token range's slots into an object (store) and its scatter back (retrieve).

vLLM 0.32's CPU attention backend keeps each layer's KV as ``[blocks, kv_heads, block_size,
2 * head_size]`` (K in the first half of the last dimension, V in the second); an LMCache
object (``KV_2LTD``) is ``[2, layers, tokens, kv_heads * head_size]``. A token's slot is
``block * block_size + offset``; negative slots are padding and are skipped.

Imports LMCache: only the lmcache environment (scripts/install-lmcache) can import this.
"""

import torch
from lmcache.v1.gpu_connector.gpu_connectors import GPUConnectorInterface
from lmcache.v1.memory_management import MemoryFormat


class PagedCPUKV(GPUConnectorInterface):
    """Gather/scatter between vLLM-CPU's per-layer paged KV and LMCache's KV_2LTD objects."""

    def __init__(self, num_layers, num_kv_heads, head_size):
        self.num_layers, self.num_kv_heads, self.head_size = num_layers, num_kv_heads, head_size
        self.kvcaches = None

    @classmethod
    def from_metadata(cls, metadata):
        """From LMCache's engine metadata: ``kv_shape`` is (layers, 2, chunk, kv_heads, head)."""
        if metadata.use_mla:
            raise ValueError("PagedCPUKV: MLA caches are not supported")
        layers, _, _, heads, head = metadata.kv_shape
        return cls(layers, heads, head)

    def get_shape(self, num_tokens):
        return torch.Size([2, self.num_layers, num_tokens, self.num_kv_heads * self.head_size])

    def initialize_kvcaches_ptr(self, **kwargs):
        if "kvcaches" in kwargs:
            self.kvcaches = list(kwargs["kvcaches"])

    def _layer(self, i):
        """Layer i as ``[blocks, heads, block_size, 2, head]`` (a view: writes reach vLLM)."""
        t = self.kvcaches[i]
        nb, nh, bs, hs2 = t.shape if t.dim() == 4 else (None,) * 4
        if t.dim() != 4 or nh != self.num_kv_heads or hs2 != 2 * self.head_size:
            raise ValueError(f"PagedCPUKV: layer {i}'s KV cache has shape {tuple(t.shape)}; "
                             f"expected [blocks, {self.num_kv_heads}, block_size, "
                             f"{2 * self.head_size}] (vLLM's CPU backend)")
        return t.view(nb, nh, bs, 2, self.head_size)

    def _slots(self, kwargs, start, end, skip=0):
        """(blocks, offsets, rows): the slots of tokens [start + skip, end) that are not
        padding, and their rows in the object (0 = token ``start``)."""
        if self.kvcaches is None:
            raise RuntimeError("PagedCPUKV: no KV caches (pass kvcaches=...)")
        if "slot_mapping" not in kwargs:
            raise ValueError("PagedCPUKV: slot_mapping is required")
        slots = kwargs["slot_mapping"][start:end].to(device="cpu", dtype=torch.int64)
        rows = torch.arange(end - start)
        keep = (slots >= 0) & (rows >= skip)
        slots, rows = slots[keep], rows[keep]
        bs = self.kvcaches[0].shape[2]
        return torch.div(slots, bs, rounding_mode="floor"), slots % bs, rows

    def from_gpu(self, memory_obj, start, end, **kwargs):
        """Store: tokens [start, end) from vLLM's blocks into ``memory_obj`` (padding rows
        zero)."""
        self.initialize_kvcaches_ptr(**kwargs)
        blocks, offs, rows = self._slots(kwargs, start, end)
        out = memory_obj.tensor
        n = end - start
        full = rows.numel() == n
        for i in range(self.num_layers):
            got = self._layer(i)[blocks, :, offs]  # [tokens, heads, 2, head]
            got = got.permute(2, 0, 1, 3).reshape(2, rows.numel(), -1)
            if full:
                out[:, i, :n].copy_(got)
            else:
                out[:, i, :n].zero_()
                out[:, i, rows] = got
        memory_obj.metadata.fmt = MemoryFormat.KV_2LTD

    def to_gpu(self, memory_obj, start, end, **kwargs):
        """Retrieve: ``memory_obj`` into vLLM's blocks of tokens [start, end), less the tokens
        vLLM's own prefix cache holds (``vllm_cached_tokens``, from the sequence's start)."""
        if memory_obj.metadata.fmt != MemoryFormat.KV_2LTD:
            raise ValueError(f"PagedCPUKV: object format {memory_obj.metadata.fmt}, expected "
                             "KV_2LTD")
        self.initialize_kvcaches_ptr(**kwargs)
        skip = max(0, kwargs.get("vllm_cached_tokens", 0) - start)
        blocks, offs, rows = self._slots(kwargs, start, end, skip)
        src = memory_obj.tensor
        for i in range(self.num_layers):
            part = src[:, i, rows].view(2, rows.numel(), self.num_kv_heads, self.head_size)
            self._layer(i)[blocks, :, offs] = part.permute(1, 2, 0, 3)

    def batched_from_gpu(self, memory_objs, starts, ends, **kwargs):
        for obj, s, e in zip(memory_objs, starts, ends):
            self.from_gpu(obj, s, e, **kwargs)

    def batched_to_gpu(self, memory_objs=None, starts=None, ends=None, **kwargs):
        for obj, s, e in zip(memory_objs or [], starts or [], ends or []):
            self.to_gpu(obj, s, e, **kwargs)
