"""The header at the start of every object the connector puts: checked before a load hands
any block to vLLM (DESIGN.md §9: bytes are served only under the identity they were put with).

64 bytes, little-endian, then the KV payload (``KVLayout``'s object order)::

    0  u32 magic "TKVH"     4  u16 version (1)     6  u16 header bytes (64)
    8  u64 key model id    16  u64 key hash
   24  u16 tp rank  26 u16 tp size  28 u16 pp rank  30 u16 pp size
   32  u64 layout digest   (XXH3-64 of the saving worker's ``layout_text``)
   40  u64 payload bytes
   48  u64 payload XXH3-64
   56  u64 header XXH3-64  (of bytes 0..55)

The key and rank say *which* object this is: a span the daemon mixed up, an object another
rank put under this key, or a key collision is refused. The layout digest says the bytes are in
this worker's order (the scheduler cannot know the attention backend's tensor shapes, so the
model id does not carry them). The payload checksum catches bytes changed after the put (the
tier slot reused under a reader, a torn copy). 64 bytes keep the payload 64-byte aligned
within the object (the daemon aligns objects themselves).
"""

import struct

import xxhash

__all__ = ["HEADER_BYTES", "HeaderMismatch", "pack", "check", "layout_text", "layout_digest"]

MAGIC = 0x484B5654  # "TKVH" little-endian
VERSION = 1
HEADER_BYTES = 64
_FMT = "<IHHQQHHHHQQQ"  # up to the header checksum: 56 bytes
_BODY = struct.calcsize(_FMT)
assert _BODY == 56


class HeaderMismatch(ValueError):
    """An object that is not the one asked for (a load error: vLLM recomputes)."""


def pack(key, rank, digest, payload_bytes, payload_xxh3):
    body = struct.pack(_FMT, MAGIC, VERSION, HEADER_BYTES, key[0], key[1], rank.tp_rank,
                       rank.tp_size, rank.pp_rank, rank.pp_size, digest, payload_bytes,
                       payload_xxh3)
    return body + struct.pack("<Q", xxhash.xxh3_64_intdigest(body))


def check(header, key, rank, digest, payload_bytes):
    """Raises HeaderMismatch unless ``header`` (64 bytes) is that of ``key`` put by a worker of
    ``rank`` with layout ``digest`` and ``payload_bytes`` of payload; returns the payload's
    recorded XXH3-64 (the caller checks the payload against it)."""
    header = bytes(header)
    if len(header) != HEADER_BYTES:
        raise HeaderMismatch(f"object header is {len(header)} bytes, not {HEADER_BYTES}")
    (want,) = struct.unpack_from("<Q", header, _BODY)
    if xxhash.xxh3_64_intdigest(header[:_BODY]) != want:
        raise HeaderMismatch("object header checksum mismatch")
    (magic, version, nbytes, model, hash_, tp_rank, tp_size, pp_rank, pp_size, got_digest,
     got_payload, payload_xxh3) = struct.unpack_from(_FMT, header)
    if magic != MAGIC or version != VERSION or nbytes != HEADER_BYTES:
        raise HeaderMismatch(f"not a TempoKV vLLM object (magic {magic:#x}, version "
                             f"{version}, header {nbytes} B)")
    if (model, hash_) != tuple(key):
        raise HeaderMismatch(f"object of key {model:016x}{hash_:016x}, expected "
                             f"{key[0]:016x}{key[1]:016x}")
    got_rank = (tp_rank, tp_size, pp_rank, pp_size)
    if got_rank != (rank.tp_rank, rank.tp_size, rank.pp_rank, rank.pp_size):
        raise HeaderMismatch(f"object of rank tp {tp_rank}/{tp_size} pp {pp_rank}/{pp_size}, "
                             f"expected tp {rank.tp_rank}/{rank.tp_size} pp "
                             f"{rank.pp_rank}/{rank.pp_size}")
    if got_digest != digest:
        raise HeaderMismatch(f"object of KV layout {got_digest:016x}, this worker's is "
                             f"{digest:016x}")
    if got_payload != payload_bytes:
        raise HeaderMismatch(f"object payload of {got_payload} B, expected {payload_bytes}")
    return payload_xxh3


def layout_text(layout):
    """What fixes the order of an object's bytes: per layer (in the object's order) its name,
    dtype, block dimension and shape without the block count, and the chunk's geometry."""
    rows = [f"bpc={layout.blocks_per_chunk}", f"bs={layout.block_size}"]
    for la in layout.layers:
        shape = list(la.tensor.shape)
        shape[la.block_dim] = "*"
        rows.append(f"{la.name}:{la.tensor.dtype}:{la.block_dim}:{shape}")
    return "\n".join(rows)


def layout_digest(layout):
    return xxhash.xxh3_64_intdigest(layout_text(layout).encode("utf-8"))
