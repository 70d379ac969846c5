"""Chunk keys, the same scheme as ``tempokv::Key`` (include/tempokv/key.h, src/common/key.cc).

* model id = XXH3-64 of the model name's UTF-8 bytes (seed 0);
* chunk hash = XXH3-64 of the chunk's token ids as little-endian uint32, seeded with the previous
  chunk's hash (0 for the first chunk), so equal prefixes of the same model give equal keys.

Only whole chunks are keyed (``chunk_prefix`` drops a final partial chunk, as the C++ does).
Needs the ``xxhash`` package (PyPI), not the standard library.
"""

import itertools
import os
import struct
import threading

import xxhash

__all__ = ["model_id", "chain_hash", "chunk_keys", "RequestIds"]

_U32_MAX = (1 << 32) - 1


def model_id(model_name):
    return xxhash.xxh3_64_intdigest(model_name.encode("utf-8"))


def chain_hash(previous, tokens):
    for t in tokens:
        if not 0 <= t <= _U32_MAX:
            raise ValueError(f"token id {t} does not fit in uint32")
    return xxhash.xxh3_64_intdigest(struct.pack(f"<{len(tokens)}I", *tokens), seed=previous)


def chunk_keys(model, tokens, chunk_tokens):
    """[(model id, hash), ...] of the whole chunks of ``tokens``; ``model`` is a name or an id."""
    if chunk_tokens <= 0:
        raise ValueError("chunk_tokens must be positive")
    mid = model_id(model) if isinstance(model, str) else int(model)
    keys, prev = [], 0
    for begin in range(0, len(tokens) - chunk_tokens + 1, chunk_tokens):
        prev = chain_hash(prev, tokens[begin:begin + chunk_tokens])
        keys.append((mid, prev))
    return keys


class RequestIds:
    """vLLM's string request ids as unique u64 ids for tempokvd, whose ids are per runtime
    (several engines or processes may join one runtime): a random 24-bit prefix per instance
    above a 40-bit counter, never a hash of the string (a hash could collide). The same string
    gets the same id until it is released. Thread-safe."""

    def __init__(self, first=None):
        if first is None:
            first = (int.from_bytes(os.urandom(3), "little") << 40) | 1
        self._next = itertools.count(first)
        self._ids = {}
        self._lock = threading.Lock()

    def get(self, request_id):
        with self._lock:
            rid = self._ids.get(request_id)
            if rid is None:
                rid = self._ids[request_id] = next(self._next)
            return rid

    def peek(self, request_id):
        with self._lock:
            return self._ids.get(request_id)

    def release(self, request_id):
        with self._lock:
            return self._ids.pop(request_id, None)

    def __len__(self):
        with self._lock:
            return len(self._ids)
