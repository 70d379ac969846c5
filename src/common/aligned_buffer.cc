#include "common/aligned_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/units.h"

namespace tempokv {

Result<AlignedBuffer> AlignedBuffer::allocate(size_t bytes, bool huge_pages) {
  if (bytes == 0) return Status::invalid_argument("AlignedBuffer::allocate: size is zero");
  AlignedBuffer b;
  b.size_ = bytes;
  void* p = MAP_FAILED;
  if (huge_pages) {
    b.mapped_ = round_up(bytes, 2 * kMiB);
    p = mmap(nullptr, b.mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
             -1, 0);
    b.huge_ = p != MAP_FAILED;
  }
  if (p == MAP_FAILED) {
    b.mapped_ = round_up(bytes, kBlockBytes);
    p = mmap(nullptr, b.mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      return Status::from_errno(errno, "mmap of " + format_bytes(bytes) + " buffer");
    }
    if (huge_pages) madvise(p, b.mapped_, MADV_HUGEPAGE);
  }
  b.data_ = static_cast<std::byte*>(p);
  return b;
}

AlignedBuffer::~AlignedBuffer() {
  if (data_) munmap(data_, mapped_);
}

AlignedBuffer::AlignedBuffer(AlignedBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      mapped_(std::exchange(o.mapped_, 0)),
      huge_(std::exchange(o.huge_, false)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& o) noexcept {
  if (this != &o) {
    if (data_) munmap(data_, mapped_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    mapped_ = std::exchange(o.mapped_, 0);
    huge_ = std::exchange(o.huge_, false);
  }
  return *this;
}

AlignedBytes allocate_blocks(size_t bytes) {
  const size_t n = round_up(bytes == 0 ? 1 : bytes, kBlockBytes);
  AlignedBytes p(static_cast<std::byte*>(std::aligned_alloc(kBlockBytes, n)));
  if (p) std::memset(p.get(), 0, n);
  return p;
}

}  // namespace tempokv
