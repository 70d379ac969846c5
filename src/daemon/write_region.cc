#include "daemon/write_region.h"

#include <algorithm>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/shared_file.h"

namespace tempokv::service {

Result<std::unique_ptr<WriteRegion>> WriteRegion::create(const std::string& path, uint64_t bytes,
                                                         std::optional<uint32_t> group) {
  if (bytes == 0 || bytes % 4096 != 0) {
    return Status::invalid_argument("write region size must be a positive multiple of 4096, got " +
                                    std::to_string(bytes));
  }
  TEMPOKV_ASSIGN_OR_RETURN(const int fd, create_shared_file(path, group));
  // Sized, not backed: allocate() backs what reservations reach.
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    Status st = Status::from_errno(errno, "size the write region " + path);
    close(fd);
    unlink(path.c_str());
    return st;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);  // the mapping keeps the file's pages
  if (p == MAP_FAILED) {
    Status st = Status::from_errno(errno, "mmap write region " + path);
    unlink(path.c_str());
    return st;
  }
  return std::unique_ptr<WriteRegion>(new WriteRegion(path, bytes, static_cast<std::byte*>(p)));
}

Status WriteRegion::allocate(uint64_t end) const {
  end = std::min(end, bytes_);
  const int fd = open(path_.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Status::from_errno(errno, "open the write region " + path_);
  const int err = posix_fallocate(fd, 0, static_cast<off_t>(end));
  close(fd);
  if (err != 0) {
    return Status::from_errno(err, "back the write region " + path_ + " up to " +
                                       std::to_string(end) + " bytes (is its filesystem large "
                                       "enough? lower writes.region_bytes)");
  }
  return Status::ok();
}

WriteRegion::~WriteRegion() {
  munmap(base_, bytes_);
  unlink(path_.c_str());
}

Result<uint64_t> WriteRegion::reserve(uint64_t bytes) {
  if (bytes == 0) return Status::invalid_argument("reserve_write: bytes must be positive");
  std::optional<uint64_t> offset = alloc_.allocate(bytes);
  if (!offset) {
    return Status::resource_exhausted(
        "reserve_write: " + std::to_string(bytes) + " bytes do not fit the write region now (" +
        std::to_string(alloc_.largest_free_bytes()) + " bytes in its largest free run of " +
        std::to_string(bytes_) + "); retry after outstanding puts complete");
  }
  live_[*offset] = bytes;
  return *offset;
}

void WriteRegion::release(uint64_t offset) {
  auto it = live_.find(offset);
  if (it == live_.end()) return;
  alloc_.free(offset, it->second);
  live_.erase(it);
}

std::optional<uint64_t> WriteRegion::reserved(uint64_t offset) const {
  auto it = live_.find(offset);
  if (it == live_.end()) return std::nullopt;
  return it->second;
}

}  // namespace tempokv::service
