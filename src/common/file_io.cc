#include "common/file_io.h"

#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/units.h"

namespace tempokv {
namespace {

template <typename Call>
RangeIo transfer_range(Call call, size_t len, bool direct) {
  RangeIo r;
  while (r.bytes < len) {
    const ssize_t n = call(r.bytes);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      r.error = errno;
      break;
    }
    if (n == 0) break;  // end of file
    r.bytes += static_cast<size_t>(n);
    if (direct && !is_aligned(r.bytes, kBlockBytes)) break;
  }
  return r;
}

}  // namespace

Result<size_t> RangeIo::result(std::string_view what) const {
  if (error == 0) return bytes;
  std::string message(what);
  if (bytes > 0) message += " (after " + std::to_string(bytes) + " bytes)";
  return Status::from_errno(error, message);
}

RangeIo pread_range(int fd, void* buf, size_t len, uint64_t offset, bool direct) {
  auto* bytes = static_cast<char*>(buf);
  return transfer_range(
      [&](size_t done) {
        return ::pread(fd, bytes + done, len - done, static_cast<off_t>(offset + done));
      },
      len, direct);
}

RangeIo pwrite_range(int fd, const void* buf, size_t len, uint64_t offset, bool direct) {
  const auto* bytes = static_cast<const char*>(buf);
  return transfer_range(
      [&](size_t done) {
        return ::pwrite(fd, bytes + done, len - done, static_cast<off_t>(offset + done));
      },
      len, direct);
}

}  // namespace tempokv
