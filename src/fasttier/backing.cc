#include "fasttier/backing.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

#include "common/aligned_buffer.h"

namespace tempokv {
namespace {

class AnonymousBacking final : public Backing {
 public:
  explicit AnonymousBacking(AlignedBuffer buf) : buf_(std::move(buf)) {}
  std::byte* base() override { return buf_.data(); }
  uint64_t size_bytes() const override { return buf_.size(); }
  bool huge_pages() const override { return buf_.huge_pages(); }
  BackingKind kind() const override { return BackingKind::kAnonymous; }

 private:
  AlignedBuffer buf_;
};

class MetadataBacking final : public Backing {
 public:
  explicit MetadataBacking(uint64_t bytes) : bytes_(bytes) {}
  std::byte* base() override { return nullptr; }
  uint64_t size_bytes() const override { return bytes_; }
  BackingKind kind() const override { return BackingKind::kMetadata; }

 private:
  uint64_t bytes_;
};

// A MAP_SHARED mapping of a descriptor it owns: a file, a dax device or a memfd.
class SharedMappingBacking final : public Backing {
 public:
  SharedMappingBacking(BackingKind kind, int fd, void* base, uint64_t bytes, bool huge)
      : kind_(kind), fd_(fd), base_(static_cast<std::byte*>(base)), bytes_(bytes), huge_(huge) {}
  ~SharedMappingBacking() override {
    munmap(base_, bytes_);
    close(fd_);
  }
  SharedMappingBacking(const SharedMappingBacking&) = delete;
  SharedMappingBacking& operator=(const SharedMappingBacking&) = delete;

  std::byte* base() override { return base_; }
  uint64_t size_bytes() const override { return bytes_; }
  int fd() const override { return fd_; }
  bool huge_pages() const override { return huge_; }
  BackingKind kind() const override { return kind_; }

 private:
  BackingKind kind_;
  int fd_;
  std::byte* base_;
  uint64_t bytes_;
  bool huge_;
};

Result<std::unique_ptr<Backing>> map_shared(BackingKind kind, int fd, uint64_t bytes, bool huge,
                                            bool populate, const std::string& what) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | (populate ? MAP_POPULATE : 0),
                 fd, 0);
  if (p == MAP_FAILED) {
    Status st = Status::from_errno(errno, "mmap of fast tier " + what);
    close(fd);
    return st;
  }
  return std::unique_ptr<Backing>(new SharedMappingBacking(kind, fd, p, bytes, huge));
}

Result<std::unique_ptr<Backing>> make_file_backing(const FastTierOptions& o) {
  int fd = open(o.path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::from_errno(errno, "open fast tier file " + o.path);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    Status s = Status::from_errno(errno, "fstat " + o.path);
    close(fd);
    return s;
  }
  // A dax device has a fixed size and cannot be truncated; a regular file is sized to capacity.
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) < o.capacity_bytes &&
      ftruncate(fd, static_cast<off_t>(o.capacity_bytes)) != 0) {
    Status s = Status::from_errno(errno, "ftruncate " + o.path);
    close(fd);
    return s;
  }
  auto b = map_shared(BackingKind::kFile, fd, o.capacity_bytes, false, o.populate, o.path);
  // A shared file cannot be hugetlb unless it lives on hugetlbfs; ask for transparent huge pages
  // (honoured on tmpfs and /dev/shm where shmem_enabled allows), a hint that never fails the tier.
  if (b.is_ok() && o.huge_pages) madvise((*b)->base(), o.capacity_bytes, MADV_HUGEPAGE);
  return b;
}

// A hugetlb memfd mapped at capacity, or nullptr when the system cannot give one: a capacity the
// huge page size does not divide (ftruncate refuses), or a hugetlb pool too small (ftruncate
// succeeds, and mmap fails for want of pages to reserve).
std::unique_ptr<Backing> try_huge_memfd(const FastTierOptions& o) {
  int fd = memfd_create("tempokv-fasttier", MFD_CLOEXEC | MFD_HUGETLB);
  if (fd < 0) return nullptr;
  if (ftruncate(fd, static_cast<off_t>(o.capacity_bytes)) != 0) {
    close(fd);
    return nullptr;
  }
  void* p = mmap(nullptr, o.capacity_bytes, PROT_READ | PROT_WRITE,
                 MAP_SHARED | (o.populate ? MAP_POPULATE : 0), fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  return std::unique_ptr<Backing>(
      new SharedMappingBacking(BackingKind::kMemfd, fd, p, o.capacity_bytes, true));
}

Result<std::unique_ptr<Backing>> make_memfd_backing(const FastTierOptions& o) {
  if (o.huge_pages) {
    if (std::unique_ptr<Backing> huge = try_huge_memfd(o)) return huge;
  }
  int fd = memfd_create("tempokv-fasttier", MFD_CLOEXEC);
  if (fd < 0) return Status::from_errno(errno, "memfd_create for the fast tier");
  if (ftruncate(fd, static_cast<off_t>(o.capacity_bytes)) != 0) {
    Status s = Status::from_errno(errno, "ftruncate of the fast tier memfd");
    close(fd);
    return s;
  }
  auto b = map_shared(BackingKind::kMemfd, fd, o.capacity_bytes, false, o.populate, "memfd");
  // Normal pages, but transparent huge pages where shmem allows them (shmem_enabled=advise).
  if (b.is_ok() && o.huge_pages) madvise((*b)->base(), o.capacity_bytes, MADV_HUGEPAGE);
  return b;
}

}  // namespace

Result<std::unique_ptr<Backing>> make_backing(const FastTierOptions& o) {
  switch (o.backing) {
    case BackingKind::kAnonymous: {
      TEMPOKV_ASSIGN_OR_RETURN(AlignedBuffer buf,
                               AlignedBuffer::allocate(o.capacity_bytes, o.huge_pages));
      return std::unique_ptr<Backing>(new AnonymousBacking(std::move(buf)));
    }
    case BackingKind::kFile:
      return make_file_backing(o);
    case BackingKind::kMemfd:
      return make_memfd_backing(o);
    case BackingKind::kMetadata:
      return std::unique_ptr<Backing>(new MetadataBacking(o.capacity_bytes));
  }
  return Status::invalid_argument("unknown fast-tier backing kind");
}

}  // namespace tempokv
