#include "store/file_ops.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "common/file_io.h"

namespace tempokv::store {
namespace {

class RealFileOps final : public FileOps {
 public:
  Result<int> create(const std::string& path, bool direct) override {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | (direct ? O_DIRECT : 0),
                    0644);
    if (fd < 0) return Status::from_errno(errno, "create " + path);
    return fd;
  }
  Status allocate(int fd, const std::string& path, uint64_t bytes) override {
    if (fallocate(fd, 0, 0, static_cast<off_t>(bytes)) != 0) {
      return Status::from_errno(errno, "fallocate " + std::to_string(bytes) + " bytes for " + path);
    }
    return Status::ok();
  }
  Status write_at(int fd, const std::string& path, const void* buf, size_t len,
                  uint64_t offset) override {
    TEMPOKV_ASSIGN_OR_RETURN(size_t n, pwrite_range(fd, buf, len, offset).result("write " + path));
    if (n != len) return Status::from_errno(ENOSPC, "short write of " + path);
    return Status::ok();
  }
  Status sync_data(int fd, const std::string& path) override {
    if (::fdatasync(fd) != 0) return Status::from_errno(errno, "fdatasync " + path);
    return Status::ok();
  }
  Status rename(const std::string& from, const std::string& to) override {
    if (std::rename(from.c_str(), to.c_str()) != 0) {
      return Status::from_errno(errno, "rename " + from + " to " + to);
    }
    return Status::ok();
  }
  Status unlink(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return Status::from_errno(errno, "unlink " + path);
    return Status::ok();
  }
  Status sync_dir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Status::from_errno(errno, "open directory " + dir);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return Status::from_errno(err, "fsync directory " + dir);
    return Status::ok();
  }
};

}  // namespace

FileOps& real_file_ops() {
  static RealFileOps ops;
  return ops;
}

}  // namespace tempokv::store
