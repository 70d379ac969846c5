// Helpers for the SSD engine tests: a temporary file (O_DIRECT when asked) that is removed at the
// end, a byte pattern that differs per block, and a bounded wait on a RealExecutor.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "executor/loop_util.h"
#include "executor/real_executor.h"

namespace tempokv::testing {

// A file under /var/tmp (disk-backed, unlike a tmpfs /tmp that may refuse O_DIRECT).
class TempFile {
 public:
  explicit TempFile(bool direct) {
    char path[] = "/var/tmp/tempokv-ssd-test-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
      error_ = std::string("mkstemp: ") + std::strerror(errno);
      return;
    }
    path_ = path;
    close(fd);
    fd_ = open(path, O_RDWR | (direct ? O_DIRECT : 0));
    if (fd_ < 0) {
      direct_refused_ = direct && errno == EINVAL;
      error_ = std::string("open ") + path + ": " + std::strerror(errno);
    }
  }
  ~TempFile() {
    if (fd_ >= 0) close(fd_);
    if (!path_.empty()) unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  int fd() const { return fd_; }
  bool direct_refused() const { return direct_refused_; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool direct_refused_ = false;
  std::string error_;
};

inline uint8_t pattern_byte(uint64_t offset) {
  return static_cast<uint8_t>((offset >> 12) * 31 + offset % 251);
}

inline void fill_pattern(void* buf, uint64_t file_offset, size_t len) {
  auto* p = static_cast<uint8_t*>(buf);
  for (size_t i = 0; i < len; ++i) p[i] = pattern_byte(file_offset + i);
}

inline bool matches_pattern(const void* buf, uint64_t file_offset, size_t len) {
  const auto* p = static_cast<const uint8_t*>(buf);
  for (size_t i = 0; i < len; ++i) {
    if (p[i] != pattern_byte(file_offset + i)) return false;
  }
  return true;
}

}  // namespace tempokv::testing
