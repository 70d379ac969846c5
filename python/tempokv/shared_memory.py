"""TempoKVClient's shared memory: the fast tier mapped read-only (claims' objects are read from
it) and the runtime's write region mapped read-write, through which puts store new KV.

A part of :class:`tempokv.client.TempoKVClient`, not a class to use alone.
"""

import mmap
import os

from . import errors
from .errors import FailedPrecondition, Internal, InvalidArgument
from .wire import checksum_pair, key_pair, u32, u64, xxh3_128


class SharedMemory:
    """The tier and write-region mappings, read_object, and the puts."""

    def _map_shared_memory(self):
        self._tier = self._map(self.hello.get("tier_path", ""), self.hello.get("tier_bytes", 0),
                               False, "the fast tier")

    def _unmap_shared_memory(self):
        for attr in ("_tier", "_write"):
            self._unmap(attr)
        self._write_path = None

    def _unmap(self, attr):
        m = getattr(self, attr)
        setattr(self, attr, None)
        if m is not None:
            try:
                m.close()
            except BufferError:
                pass  # exported memoryviews keep it; it is unmapped when they go

    @staticmethod
    def _map(path, nbytes, writable, what):
        if not nbytes:
            return None
        try:
            fd = os.open(path, (os.O_RDWR if writable else os.O_RDONLY) | os.O_CLOEXEC)
        except OSError as e:
            raise errors.error_from_code("IOError", f"mapping {what}: open {path}: {e}") from e
        try:
            size = os.fstat(fd).st_size
            if size < nbytes:
                # Mapping past the end would turn a short file into SIGBUS on first touch.
                raise FailedPrecondition("FailedPrecondition",
                                         f"mapping {what}: {path} is {size} bytes, the daemon "
                                         f"announced {nbytes}")
            access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
            return mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED, access=access)
        except OSError as e:
            raise errors.error_from_code("IOError", f"mapping {what}: mmap {path}: {e}") from e
        finally:
            os.close(fd)  # the mapping keeps the file referenced

    def read_object(self, offset, nbytes):
        """A read-only, zero-copy memoryview of ``nbytes`` at ``offset`` in the tier mapping.
        Release it (or let it go) before :meth:`close` unmaps the tier."""
        if self._tier is None:
            raise FailedPrecondition("FailedPrecondition", "read_object: the tier is not mapped")
        if offset < 0 or nbytes < 0 or offset + nbytes > len(self._tier):
            raise InvalidArgument("InvalidArgument",
                                  f"read_object: [{offset}, {offset}+{nbytes}) is outside the "
                                  f"tier of {len(self._tier)} bytes")
        return memoryview(self._tier)[offset:offset + nbytes]

    def put(self, key, first_token, end_token, payload):
        """Stores ``payload`` (bytes-like) under ``key`` = (model, hash) for tokens
        [first_token, end_token): reserve_write, copy into the write region, put. Returns once
        the daemon says the object is durable. ResourceExhausted when the write region is full
        now (retry after outstanding puts complete)."""
        wire_key = key_pair("key", key)
        first_token = u32("first_token", first_token)
        end_token = u32("end_token", end_token)
        if end_token < first_token:
            raise InvalidArgument("InvalidArgument",
                                  f"put: end_token {end_token} is below first_token {first_token}")
        view = memoryview(payload).cast("B")
        nbytes = view.nbytes
        if nbytes == 0:
            raise InvalidArgument("InvalidArgument", "put: empty payload")
        if not self._map_shm:
            raise FailedPrecondition("FailedPrecondition",
                                     "put: this client maps no shared memory (map_shared_memory)")
        # Hashed from the caller's bytes: the daemon stores them only if the region holds them.
        checksum = xxh3_128(view)
        offset = self._reserve(nbytes)
        try:
            self._write[offset:offset + nbytes] = view
        except BaseException:
            try:
                if isinstance(offset, int) and offset >= 0:
                    self._call("abort_write", {"offset": offset})
            except errors.TempoKVError:
                pass  # the session's end frees its reservations anyway
            raise
        # The daemon frees the reservation whatever the put's outcome: no abort_write after it.
        self._call("put", {"key": wire_key, "first_token": first_token, "end_token": end_token,
                           "offset": offset, "bytes": nbytes, "checksum": checksum},
                   self.put_timeout_s)

    def reserve_write(self, nbytes):
        """Reserves ``nbytes`` in the write region; returns the offset. For callers that fill the
        region themselves (e.g. straight from a tensor) and then :meth:`put_reserved`."""
        return self._reserve(u64("bytes", nbytes))

    def _reserve(self, nbytes):
        """reserve_write: the offset, with the runtime's write region (which the reply names)
        mapped as :attr:`write_region`."""
        result = self._call("reserve_write", {"bytes": nbytes})
        offset = result.get("offset")
        try:
            path, size = result.get("write_path"), result.get("write_bytes")
            if not isinstance(path, str) or not path or not isinstance(size, int):
                raise Internal("Internal", "tempokvd answered reserve_write without its write "
                                           f"region ({result!r})")
            if self._write is None or self._write_path != path:
                self._unmap("_write")
                self._write = self._map(path, size, True, "the write region")
                self._write_path = path
                self.write_regions_mapped += 1
            if not isinstance(offset, int) or offset < 0 or offset + nbytes > len(self._write):
                raise Internal("Internal", f"tempokvd reserved {nbytes} bytes at offset "
                                           f"{offset!r}, outside the write region of "
                                           f"{len(self._write)} bytes")
        except BaseException:
            if isinstance(offset, int) and offset >= 0:
                try:
                    self._call("abort_write", {"offset": offset})
                except errors.TempoKVError:
                    pass
            raise
        return offset

    def put_reserved(self, key, first_token, end_token, offset, nbytes, checksum=None):
        """``put`` of a payload already written at ``offset`` (from :meth:`reserve_write`).
        ``checksum``: the payload's XXH3-128 as an int (``xxhash.xxh3_128_intdigest`` of the
        bytes the caller meant to put); None hashes what the region holds now. Returns once
        durable; the reservation is freed whatever the outcome."""
        nbytes = u64("bytes", nbytes)
        offset = u64("offset", offset)
        if checksum is None:
            if self._write is None or offset + nbytes > len(self._write):
                raise InvalidArgument("InvalidArgument", f"put_reserved: [{offset}, "
                                      f"{offset + nbytes}) is outside the mapped write region")
            checksum = xxh3_128(memoryview(self._write)[offset:offset + nbytes])
        else:
            checksum = checksum_pair(checksum)
        self._call("put", {"key": key_pair("key", key),
                           "first_token": u32("first_token", first_token),
                           "end_token": u32("end_token", end_token),
                           "offset": offset, "bytes": nbytes, "checksum": checksum},
                   self.put_timeout_s)

    def abort_write(self, offset):
        self._call("abort_write", {"offset": u64("offset", offset)})
