"""tempokvd's filter of stored keys, mapped read-only: a definite miss without a round trip.

The daemon keeps a counting filter of the keys its store indexes in a shared file and names it
in the hello reply (``key_filter_path``; "" when it offers none, e.g. with a remote tier). Each
key has two one-byte counters chosen by two seeded hashes; both are non-zero for every stored
key (saturated counters are never lowered), so ``may_hold(key) is False`` means the store does
not hold the key now. A True may be a false positive: ask the daemon. docs/protocol.md, "The key
filter", has the layout; src/daemon/key_filter.h the daemon's side.

A filter belongs to one daemon instance: ``usable(instance)`` is False once the daemon closed
it (``live`` cleared) or when another instance serves now (a stale file of a daemon that was
killed: its counters no longer change). Reads are lock-free one-byte loads from the mapping.
"""

import mmap
import os
import struct

from .errors import InvalidArgument

__all__ = ["KeyFilter", "filter_slot"]

MAGIC = b"TKVKEYS1"
VERSION = 1
HEADER_BYTES = 64
_M64 = (1 << 64) - 1
_HEADER = struct.Struct("<8sIIQQQQ")  # magic, version, header bytes, slots, seeds, instance
_LIVE = struct.Struct("<I")
_LIVE_AT = 48


def _mix(z):
    """SplitMix64's finalizer (as the daemon's)."""
    z = (z + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def filter_slot(model, chunk_hash, seed, slots):
    """The counter of key (model, chunk_hash) under ``seed`` in a filter of ``slots``."""
    return _mix(_mix(model ^ seed) ^ chunk_hash) & (slots - 1)


class KeyFilter:
    def __init__(self, path):
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        try:
            size = os.fstat(fd).st_size
            if size < HEADER_BYTES:
                raise InvalidArgument("InvalidArgument", f"key filter {path}: {size} bytes, "
                                                         f"shorter than its header")
            self._map = mmap.mmap(fd, size, prot=mmap.PROT_READ)
        finally:
            os.close(fd)
        magic, version, header, slots, s0, s1, instance = _HEADER.unpack_from(self._map, 0)
        problem = None
        if magic != MAGIC:
            problem = f"magic {magic!r}, not {MAGIC!r}"
        elif version != VERSION or header != HEADER_BYTES:
            problem = f"version {version} with a {header}-byte header (this client reads " \
                      f"version {VERSION}, {HEADER_BYTES} bytes)"
        elif slots < 64 or slots & (slots - 1) or size != HEADER_BYTES + slots:
            problem = f"{slots} slots in {size} bytes"
        if problem:
            self._map.close()
            raise InvalidArgument("InvalidArgument", f"key filter {path}: {problem}")
        self.path, self.slots, self.instance = path, slots, instance
        self._seeds = (s0, s1)

    def live(self):
        """False once the daemon that made it closed it."""
        return _LIVE.unpack_from(self._map, _LIVE_AT)[0] == 1

    def usable(self, instance):
        """Whether its answers hold for the daemon ``instance`` now serving."""
        return instance == self.instance and self.live()

    def may_hold(self, key):
        """``key``: (model id, chunk hash). False: the store does not hold it."""
        model, h = key
        m = self._map
        for seed in self._seeds:
            if m[HEADER_BYTES + filter_slot(model, h, seed, self.slots)] == 0:
                return False
        return True

    def close(self):
        self._map.close()
