// Positioned reads and writes of a whole range: the loop around pread/pwrite (interrupted calls,
// short counts) written once. Stateless, so thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tempokv/status.h"

namespace tempokv {

// What a whole-range transfer did: the bytes moved and, when a call failed, its errno (0: none).
struct RangeIo {
  size_t bytes = 0;
  int error = 0;
  // bytes, or errno's Status naming `what` (and the bytes moved before the failure, if any).
  // Built only when asked, so that a caller on the data path describes only failures.
  Result<size_t> result(std::string_view what) const;
};

// Reads len bytes at offset into buf, calling pread again after a short count, EINTR or EAGAIN.
// Fewer than len bytes only at end of file or, with `direct` (an O_DIRECT descriptor), once the
// count is not a multiple of 4 KiB (O_DIRECT returns such a count only at end of file, and a
// read from the unaligned offset that follows would fail with EINVAL).
RangeIo pread_range(int fd, void* buf, size_t len, uint64_t offset, bool direct = false);
// The same with pwrite; a call that writes nothing ends it with the count so far.
RangeIo pwrite_range(int fd, const void* buf, size_t len, uint64_t offset, bool direct = false);

}  // namespace tempokv
