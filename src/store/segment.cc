#include "store/segment.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>

#include "store/format.h"

namespace tempokv::store {

Status sync_dir(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::from_errno(errno, "open directory " + dir);
  int rc = fsync(fd);
  int err = errno;
  close(fd);
  if (rc != 0) return Status::from_errno(err, "fsync directory " + dir);
  return Status::ok();
}

Result<int> open_segment_file(const std::string& path, bool direct, bool read_only) {
  int flags = (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC | (direct ? O_DIRECT : 0);
  int fd = open(path.c_str(), flags);
  if (fd < 0) return Status::from_errno(errno, "open " + path + (direct ? " with O_DIRECT" : ""));
  return fd;
}

Result<int> create_segment_file(const std::string& dir, uint32_t id, uint64_t bytes,
                                uint64_t capacity_bytes, bool direct, std::string_view suffix) {
  std::string path = dir + "/" + segment_file_name(id) + std::string(suffix);
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | (direct ? O_DIRECT : 0), 0644);
  if (fd < 0) return Status::from_errno(errno, "create " + path);
  auto fail = [&](int err, const std::string& what) -> Status {
    close(fd);
    unlink(path.c_str());
    return Status::from_errno(err, what + " " + path);
  };
  int rc = fallocate(fd, 0, 0, static_cast<off_t>(bytes));
  if (rc != 0) {
    return fail(errno, "fallocate " + std::to_string(bytes) + " bytes for segment");
  }
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> block(
      static_cast<std::byte*>(std::aligned_alloc(kBlockBytes, kHeaderBytes)));
  if (!block) return fail(ENOMEM, "allocate header block for");
  encode_segment_header({id, bytes, capacity_bytes},
                        std::span<std::byte, kHeaderBytes>(block.get(), kHeaderBytes));
  ssize_t n;
  do {
    n = pwrite(fd, block.get(), kHeaderBytes, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return fail(errno, "write segment header of");
  if (static_cast<uint64_t>(n) != kHeaderBytes) return fail(ENOSPC, "short write of segment header of");
  if (fdatasync(fd) != 0) return fail(errno, "fdatasync");
  Status st = sync_dir(dir);
  if (!st.is_ok()) {
    close(fd);
    unlink(path.c_str());
    return st;
  }
  return fd;
}

}  // namespace tempokv::store
