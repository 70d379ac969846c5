"""Where a chunk's KV lives in vLLM's paged KV tensors, and the copies to and from an object.

``register_kv_caches`` hands the worker one tensor per attention layer. Their shapes differ by
backend (CPU: ``[num_blocks, kv_heads, block_size, 2*head_size]``; FlashAttention on a GPU:
``[2, num_blocks, block_size, kv_heads, head_size]``), so the layout is *detected*: the block
dimension is the one whose size is ``num_blocks``, and a block of a layer is
``tensor.select(block_dim, block_id)`` whatever lies around it.

An object (one chunk of ``blocks_per_chunk`` blocks) is, block after block, each layer's block
slice in layer order: ``[block j][layer l][slice bytes]``. Object bytes are therefore only
meaningful to engines of the same geometry, which the model id folds in (``model_descriptor``).

Copies go straight between the shared mapping (as a uint8 tensor over the mmap, no Python copy)
and the KV tensors: one ``copy_`` per block and layer. Not thread-safe per instance except that
disjoint blocks may be copied from different threads.
"""

import warnings

import torch

__all__ = ["KVLayout", "buffer_tensor", "model_descriptor", "register_host"]


def buffer_tensor(buffer):
    """A uint8 tensor over a mapping (read-only mappings too: never written through)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "non-writable buffer"
        return torch.frombuffer(buffer, dtype=torch.uint8)


def register_host(t, read_only=True):
    """Pins a mapping (uint8 tensor over it) for CUDA copies; False when CUDA refuses (copies
    then stage through pageable memory, slower but correct)."""
    if t is None or not torch.cuda.is_available():
        return False
    flags = 0x08 if read_only else 0x00  # cudaHostRegisterReadOnly: the tier is mapped PROT_READ
    err = torch.cuda.cudart().cudaHostRegister(t.data_ptr(), t.numel(), flags)
    return int(err) == 0 if not isinstance(err, tuple) else int(err[0]) == 0


def model_descriptor(model, kv_cache_config, device_type, tp_size=1, tp_rank=0):
    """The string whose XXH3 is the model id: the same on the scheduler and the worker, and
    different whenever the bytes of an object would differ (geometry, dtype, block size, device
    layout, tensor-parallel shard)."""
    parts = [str(model), f"dev={device_type}", f"tp={tp_rank}/{tp_size}"]
    for group in kv_cache_config.kv_cache_groups:
        spec = group.kv_cache_spec
        parts.append(f"{type(spec).__name__}:bs={spec.block_size}:"
                     f"h={getattr(spec, 'num_kv_heads', '?')}:"
                     f"d={getattr(spec, 'head_size', '?')}:dt={spec.dtype}:"
                     f"layers={len(group.layer_names)}")
    return "|".join(parts)


class _Layer:
    __slots__ = ("name", "tensor", "block_dim", "shape", "nbytes", "offset")


class KVLayout:
    """The per-layer block views of vLLM's KV tensors."""

    def __init__(self, kv_caches, num_blocks, block_size, blocks_per_chunk):
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
            offset += layer.nbytes
            self.layers.append(layer)
        self.block_bytes = offset  # one block, all layers
        self.object_bytes = offset * self.blocks_per_chunk
        self.device = self.layers[0].tensor.device

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
        return (f"{len(self.layers)} layers, {tuple(l0.tensor.shape)} {l0.tensor.dtype} on "
                f"{self.device}, block dim {l0.block_dim}, {self.block_bytes} B per block")

    def _slices(self, obj, j):
        base = j * self.block_bytes
        for layer in self.layers:
            raw = obj[base + layer.offset: base + layer.offset + layer.nbytes]
            yield layer, raw.view(layer.tensor.dtype).view(layer.shape)

    def load(self, obj, block_ids, first=0):
        """Copies an object (uint8 tensor of ``object_bytes``) into ``block_ids`` (the chunk's
        blocks in order), skipping the chunk's first ``first`` blocks (already computed)."""
        self._check(obj, block_ids)
        non_blocking = self.device.type != "cpu"
        for j in range(first, len(block_ids)):
            for layer, src in self._slices(obj, j):
                layer.tensor.select(layer.block_dim, block_ids[j]).copy_(src,
                                                                         non_blocking=non_blocking)
        if non_blocking:
            torch.cuda.current_stream(self.device).synchronize()

    def save(self, block_ids, obj):
        """Copies the chunk's blocks into ``obj`` (uint8 tensor of ``object_bytes``)."""
        self._check(obj, block_ids)
        for j, b in enumerate(block_ids):
            for layer, dst in self._slices(obj, j):
                dst.copy_(layer.tensor.select(layer.block_dim, b))

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
