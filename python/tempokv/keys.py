"""Chunk keys, the same scheme as ``tempokv::Key`` (include/tempokv/key.h, src/common/key.cc).

* model id = XXH3-64 of the model name's UTF-8 bytes (seed 0);
* chunk hash = XXH3-64 of the chunk's token ids as little-endian uint32, seeded with the previous
  chunk's hash (0 for the first chunk), so equal prefixes of the same model give equal keys.

Only whole chunks are keyed (``chunk_prefix`` drops a final partial chunk, as the C++ does).

Inputs other than the tokens that change a chunk's KV (a LoRA adapter, a multimodal item under
placeholder tokens, vLLM's ``cache_salt``) are folded into the chain as ``ChunkExtras``: a chunk
with extras is hashed with the seed ``XXH3-64(extras as compact JSON, seed = previous hash)``
instead of the previous hash itself. Every later chunk inherits the difference through the
chain; a request without extras keys exactly as the C++ does. The model *descriptor* (runtime
version, dtype, layout, tensor-parallel rank, ...) is the model name that ``model_id`` hashes
(``tempokv.vllm.identity``).

Needs the ``xxhash`` package (PyPI), not the standard library.
"""

import itertools
import json
import os
import struct
import threading

import xxhash

__all__ = ["model_id", "chain_hash", "chunk_keys", "extras_seed", "ChunkExtras", "RequestIds"]

_U32_MAX = (1 << 32) - 1


def model_id(model_name):
    return xxhash.xxh3_64_intdigest(model_name.encode("utf-8"))


def chain_hash(previous, tokens):
    for t in tokens:
        if not 0 <= t <= _U32_MAX:
            raise ValueError(f"token id {t} does not fit in uint32")
    return xxhash.xxh3_64_intdigest(struct.pack(f"<{len(tokens)}I", *tokens), seed=previous)


def extras_seed(previous, extras):
    """The seed of a chunk's hash whose KV depends on ``extras`` (a JSON-able list)."""
    text = json.dumps(extras, separators=(",", ":"), ensure_ascii=False)
    return xxhash.xxh3_64_intdigest(text.encode("utf-8"), seed=previous)


class ChunkExtras:
    """What besides its tokens a request's KV depends on.

    ``request``: entries that concern the whole request (``["lora", name, path]``,
    ``["cache_salt", salt]``), folded into the first chunk (the chain carries them on).
    ``items``: ``(offset, length, identifier)`` of inputs that occupy token positions (a
    multimodal item's placeholder tokens): folded, as ``["mm", identifier, offset in chunk]``,
    into every chunk they overlap, as vLLM's own block hashes do, so chunks before the item
    stay shared with prompts that differ only after it."""

    def __init__(self, request=(), items=()):
        self.request = [list(e) for e in request]
        self.items = sorted((int(o), int(n), str(i)) for o, n, i in items)

    def __bool__(self):
        return bool(self.request or self.items)

    def of_chunk(self, index, begin, end):
        parts = list(self.request) if index == 0 else []
        for offset, length, ident in self.items:
            if offset < end and begin < offset + length:
                parts.append(["mm", ident, offset - begin])
        return parts


def chunk_keys(model, tokens, chunk_tokens, extras=None):
    """[(model id, hash), ...] of the whole chunks of ``tokens``; ``model`` is a name or an id;
    ``extras`` a ``ChunkExtras`` (or None)."""
    if chunk_tokens <= 0:
        raise ValueError("chunk_tokens must be positive")
    mid = model_id(model) if isinstance(model, str) else int(model)
    keys, prev = [], 0
    for i, begin in enumerate(range(0, len(tokens) - chunk_tokens + 1, chunk_tokens)):
        parts = extras.of_chunk(i, begin, begin + chunk_tokens) if extras else None
        seed = extras_seed(prev, parts) if parts else prev
        prev = chain_hash(seed, tokens[begin:begin + chunk_tokens])
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
