"""Digests of KV blocks as the worker saved and loaded them: the e2e check's oracle.

Enabled by ``kv_connector_extra_config.digest_file``; off the normal path (it reads blocks back).
One JSON line per block: ``{"op": "save"|"load", "key": "<32 hex>", "block": j, "xxh3": int,
"req": vLLM's request id, "chunk": i, "rank": r}``, where ``block`` is the block's index within
chunk ``i`` of the request and the digest covers every layer's slice of that block as it sits
in vLLM's KV tensors, layers in model order (vLLM's layer index, as its model runner lists its
KV tensors), so that a digest of blocks vLLM computed itself, taken from the runner's list
(``runner_block_digests``), compares with these.
"""

import json
import threading

import torch
import xxhash

__all__ = ["Digests", "read_digests", "read_records", "block_digest", "runner_block_digests"]


def _layer_order(layout):
    try:
        from vllm.model_executor.models.utils import extract_layer_index
    except ImportError:  # outside vLLM (unit tests): the layout's order
        return list(layout.layers)
    try:
        return sorted(layout.layers, key=lambda la: extract_layer_index(la.name))
    except (AssertionError, ValueError):
        return list(layout.layers)  # names without a layer index: as registered


def block_digest(layers, block_id):
    h = xxhash.xxh3_64()
    for la in layers:
        block = la.tensor.select(la.block_dim, block_id).contiguous().cpu()
        h.update(block.view(-1).view(torch.uint8).numpy())
    return h.intdigest()


def runner_block_digests(kv_caches, num_blocks, block_ids):
    """Digests of ``block_ids`` in a model runner's KV tensors (its ``kv_caches`` list, model
    order): for the e2e check's reference, KV that vLLM computed without the connector."""
    from .layout import KVLayout
    lay = KVLayout({str(i): t for i, t in enumerate(kv_caches)}, num_blocks, 1, 1)
    return [block_digest(lay.layers, b) for b in block_ids]


class Digests:
    def __init__(self, path):
        self._f = open(path, "a", buffering=1)
        self._lock = threading.Lock()
        self._order = None

    def record(self, op, key, j, layout, block_id, **fields):
        if self._order is None:
            self._order = _layer_order(layout)
        d = block_digest(self._order, block_id)
        line = json.dumps(dict({"op": op, "key": f"{key[0]:016x}{key[1]:016x}", "block": j,
                                "xxh3": d}, **fields))
        with self._lock:
            self._f.write(line + "\n")

    def close(self):
        with self._lock:
            self._f.close()


def read_records(path, op):
    with open(path) as f:
        return [r for r in map(json.loads, f) if r["op"] == op]


def read_digests(path, op):
    """{(key, block): digest} of one op; a block recorded twice with different digests is
    kept as None (a mismatch by itself)."""
    out = {}
    for r in read_records(path, op):
        k = (r["key"], r["block"])
        out[k] = r["xxh3"] if out.get(k, r["xxh3"]) == r["xxh3"] else None
    return out
