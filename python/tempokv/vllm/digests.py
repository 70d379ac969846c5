"""Digests of KV blocks as the worker saved and loaded them: the e2e check's first oracle.

Enabled by ``kv_connector_extra_config.digest_file``; off the normal path (it reads blocks back).
One JSON line per block: ``{"op": "save"|"load", "key": "<32 hex>", "block": j, "xxh3": int}``,
where ``block`` is the block's index within its chunk and the digest covers every layer's
slice of that block as it sits in vLLM's KV tensors.
"""

import json
import threading

import xxhash

__all__ = ["Digests", "read_digests"]


class Digests:
    def __init__(self, path):
        self._f = open(path, "a", buffering=1)
        self._lock = threading.Lock()

    def record(self, op, key, j, layout, block_id):
        d = xxhash.xxh3_64_intdigest(layout.block_bytes_of(block_id))
        line = json.dumps({"op": op, "key": f"{key[0]:016x}{key[1]:016x}", "block": j,
                           "xxh3": d})
        with self._lock:
            self._f.write(line + "\n")

    def close(self):
        with self._lock:
            self._f.close()


def read_digests(path, op):
    """{(key, block): digest} of one op; a block recorded twice with different digests is
    kept as None (a mismatch by itself)."""
    out = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r["op"] != op:
                continue
            k = (r["key"], r["block"])
            out[k] = r["xxh3"] if out.get(k, r["xxh3"]) == r["xxh3"] else None
    return out
