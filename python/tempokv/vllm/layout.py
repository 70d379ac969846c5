"""Where a chunk's KV lives in vLLM's paged KV tensors, and the copies to and from an object.

``register_kv_caches`` hands the worker one tensor per attention layer. Their shapes differ by
backend (CPU: ``[num_blocks, kv_heads, block_size, 2*head_size]``; FlashAttention on a GPU:
``[2, num_blocks, block_size, kv_heads, head_size]``), so the layout is *detected*: the block
dimension is the one whose size is ``num_blocks``, and a block of a layer is
``tensor.select(block_dim, block_id)`` whatever lies around it.

An object (one chunk of ``blocks_per_chunk`` blocks) is, block after block, each layer's block
slice in layer order: ``[block j][layer l][slice bytes]``. Object bytes are therefore only
meaningful to engines of the same geometry: the model id folds in what the scheduler knows of it
(``identity.model_descriptor``), the object header the rest (``header.layout_digest``).

Copies go straight between the shared mapping (as a uint8 tensor over the mmap, no Python copy)
and the KV tensors, as few torch calls as possible: each torch call that does work releases the
GIL, and getting it back beside a thread that runs Python (vLLM's engine loop) can cost the 5 ms
switch interval, so a copy of one call per block and layer (the first version) slowed to a crawl
beside a busy engine. A layer's tensor, contiguous, is seen as uint8 ``[outer, num_blocks,
inner]`` (``outer`` the dimensions before the block dimension: 1 on the CPU backend, K/V on
FlashAttention), so one block's slice is ``outer`` contiguous runs of ``inner`` bytes, in the
object's order. On the CPU every (run of consecutive blocks, layer, outer) pair is collected as
views and all are copied by ONE ``torch._foreach_copy_`` (plain memcpys, no temporary); the loader
copies all chunks of a load in one call (``load_chunks``). On CUDA (``staged``) the object goes to
the device in one ``copy_`` (non_blocking from the registered tier) and each layer's blocks are
written from there by one ``index_copy_`` on the device (``save``: one ``index_select`` per layer,
one copy back): O(layers) calls per chunk, one host transfer, no extra host copy. Tensors that
are not contiguous fall back to a view per block and layer (still one ``_foreach_copy_``).
Not thread-safe per instance except that disjoint blocks may be copied from different threads.
"""

import warnings

import torch

from .streams import register_host  # noqa: F401  (copy_bench, older callers)

__all__ = ["KVLayout", "buffer_tensor", "register_host"]


def buffer_tensor(buffer):
    """A uint8 tensor over a mapping (read-only mappings too: never written through)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "non-writable buffer"
        return torch.frombuffer(buffer, dtype=torch.uint8)


def _copy_all(dst, src, non_blocking=False):
    """dst[i].copy_(src[i]) for all i, in one torch call (the GIL released once) where torch has
    ``_foreach_copy_`` (2.1 and later)."""
    if hasattr(torch, "_foreach_copy_"):
        torch._foreach_copy_(dst, src, non_blocking=non_blocking)
    else:
        for d, s in zip(dst, src):
            d.copy_(s, non_blocking=non_blocking)


class _Layer:
    __slots__ = ("name", "tensor", "block_dim", "shape", "nbytes", "offset", "parts", "outer",
                 "inner")


def _parts(t, block_dim):
    """``t`` as uint8 ``[outer, num_blocks, inner]`` (a view), or None when ``t`` is not
    contiguous: then a block's slice is not ``outer`` runs of ``inner`` bytes."""
    if not t.is_contiguous() or t.numel() == 0:
        return None
    outer = 1
    for n in t.shape[:block_dim]:
        outer *= n
    return t.view(-1).view(torch.uint8).view(outer, t.shape[block_dim], -1)


class KVLayout:
    """The per-layer block views of vLLM's KV tensors."""

    def __init__(self, kv_caches, num_blocks, block_size, blocks_per_chunk, staged=None):
        if not kv_caches:
            raise ValueError("register_kv_caches gave no KV tensors")
        self.num_blocks = int(num_blocks)
        self.block_size = int(block_size)
        self.blocks_per_chunk = int(blocks_per_chunk)
        self.layers = []
        offset = 0
        for name, t in kv_caches.items():
            if isinstance(t, (list, tuple)):
                raise ValueError(f"layer {name}: separate K and V tensors are not supported")
            layer = _Layer()
            layer.name, layer.tensor = name, t
            layer.block_dim = self._block_dim(name, t)
            view = t.select(layer.block_dim, 0)
            layer.shape = tuple(view.shape)
            layer.nbytes = view.numel() * t.element_size()
            layer.offset = offset
            layer.parts = _parts(t, layer.block_dim)
            if layer.parts is not None:
                layer.outer, layer.inner = layer.parts.shape[0], layer.parts.shape[2]
            offset += layer.nbytes
            self.layers.append(layer)
        self.block_bytes = offset  # one block, all layers
        self.object_bytes = offset * self.blocks_per_chunk
        self.device = self.layers[0].tensor.device
        self.non_blocking = self.device.type != "cpu"
        # Staged: the object crosses to the device in one copy, the blocks are written there
        # (a GPU's default; on the CPU only for tests: it would be an extra host copy).
        if staged is None:
            staged = self.device.type == "cuda"
        self.staged = bool(staged) and all(la.parts is not None for la in self.layers)
        # Runs of consecutive blocks are one view each where the copy is a host memcpy; a
        # host-device copy_ of a strided view would stage it through a host temporary.
        self._merge_runs = self.device.type == "cpu"

    def _block_dim(self, name, t):
        dims = [i for i, n in enumerate(t.shape) if n == self.num_blocks]
        if not dims:
            raise ValueError(f"layer {name}: no dimension of {tuple(t.shape)} has the "
                             f"{self.num_blocks} blocks of the KV cache")
        # [2, num_blocks, ...] with num_blocks == 2 is ambiguous: K/V first is the convention.
        if len(dims) > 1 and t.shape[0] == 2 and dims[0] == 0:
            return dims[1]
        return dims[0]

    def describe(self):
        l0 = self.layers[0]
        how = ("staged" if self.staged else "direct"
               if all(la.parts is not None for la in self.layers) else "per-block")
        return (f"{len(self.layers)} layers, {tuple(l0.tensor.shape)} {l0.tensor.dtype} on "
                f"{self.device}, block dim {l0.block_dim}, {self.block_bytes} B per block, "
                f"{how} copies")

    def load(self, obj, block_ids, first=0):
        """Copies an object (uint8 tensor of ``object_bytes``) into ``block_ids`` (the chunk's
        blocks in order), skipping the chunk's first ``first`` blocks (already computed)."""
        self.load_chunks([(obj, block_ids, first)])

    def load_chunks(self, chunks):
        """``load`` of several objects, ``(obj, block_ids, first)`` each, in one copy: all are
        in the KV tensors when it returns (the current CUDA stream, the loader's own, is
        synchronized)."""
        for obj, block_ids, _ in chunks:
            self._check(obj, block_ids)
        if self.staged:
            for obj, block_ids, first in chunks:
                self._load_staged(obj, block_ids, first)
        else:
            kv, ob = [], []
            for obj, block_ids, first in chunks:
                self._pairs(obj, block_ids, first, kv, ob)
            if kv:
                _copy_all(kv, ob, self.non_blocking)
        if self.non_blocking:
            torch.cuda.current_stream(self.device).synchronize()

    def save(self, block_ids, obj):
        """Copies the chunk's blocks into ``obj`` (uint8 tensor of ``object_bytes``)."""
        self._check(obj, block_ids)
        if self.staged:
            return self._save_staged(block_ids, obj)
        kv, ob = [], []
        self._pairs(obj, block_ids, 0, kv, ob)
        _copy_all(ob, kv)

    def _runs(self, block_ids, first):
        """(chunk index, block id, count) of each run of consecutive blocks from ``first``."""
        j, n = first, len(block_ids)
        while j < n:
            k = 1
            if self._merge_runs:
                while j + k < n and block_ids[j + k] == block_ids[j] + k:
                    k += 1
            yield j, block_ids[j], k
            j += k

    def _pairs(self, obj, block_ids, first, kv, ob):
        """Appends matching views: ``kv`` in the KV tensors, ``ob`` in ``obj``."""
        rows = obj.view(self.blocks_per_chunk, self.block_bytes)
        for j, b, k in self._runs(block_ids, first):
            for layer in self.layers:
                if layer.parts is None:
                    for i in range(k):
                        a = (j + i) * self.block_bytes + layer.offset
                        kv.append(layer.tensor.select(layer.block_dim, b + i))
                        ob.append(obj[a:a + layer.nbytes].view(layer.tensor.dtype)
                                  .view(layer.shape))
                    continue
                for o in range(layer.outer):
                    a = layer.offset + o * layer.inner
                    kv.append(layer.parts[o, b:b + k])
                    ob.append(rows[j:j + k, a:a + layer.inner])

    def _layer_rows(self, rows, layer):
        """The layer's slices of ``rows`` (``[blocks, block_bytes]``) as ``[outer, blocks,
        inner]``, the shape of ``layer.parts`` indexed by those blocks."""
        s = rows[:, layer.offset:layer.offset + layer.nbytes]
        return s.view(rows.shape[0], layer.outer, layer.inner).transpose(0, 1)

    def _load_staged(self, obj, block_ids, first):
        if first >= len(block_ids):
            return
        index = torch.tensor(block_ids[first:], dtype=torch.long).to(self.device)
        tail = obj[first * self.block_bytes:]
        staging = torch.empty(tail.numel(), dtype=torch.uint8, device=self.device)
        staging.copy_(tail, non_blocking=self.non_blocking)
        rows = staging.view(-1, self.block_bytes)
        for layer in self.layers:
            layer.parts.index_copy_(1, index, self._layer_rows(rows, layer))

    def _save_staged(self, block_ids, obj):
        staging = torch.empty(self.object_bytes, dtype=torch.uint8, device=self.device)
        rows = staging.view(-1, self.block_bytes)
        index = torch.tensor(block_ids, dtype=torch.long).to(self.device)
        for layer in self.layers:
            self._layer_rows(rows, layer).copy_(layer.parts.index_select(1, index))
        obj.copy_(staging)

    def flip_bit(self, block_id):
        """Negates the first value of the block in the first layer: one bit (the sign) changed,
        for the e2e check's negative control."""
        la = self.layers[0]
        t = la.tensor.select(la.block_dim, block_id)
        at = (0,) * t.dim()
        t[at] = -t[at]

    def block_bytes_of(self, block_id):
        """One block's bytes, all layers, in object order (a copy: for checks, not the path)."""
        return b"".join(layer.tensor.select(layer.block_dim, block_id).contiguous().cpu()
                        .view(torch.uint8).numpy().tobytes() for layer in self.layers)

    def _check(self, obj, block_ids):
        if len(block_ids) != self.blocks_per_chunk:
            raise ValueError(f"a chunk has {self.blocks_per_chunk} blocks, got {len(block_ids)}")
        if obj.numel() != self.object_bytes:
            raise ValueError(f"an object is {self.object_bytes} bytes, got {obj.numel()}")
        for b in block_ids:
            if not 0 <= b < self.num_blocks:
                raise ValueError(f"block id {b} outside 0..{self.num_blocks - 1}")
