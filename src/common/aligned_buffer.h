// AlignedBuffer: an owned, 4 KiB-aligned (or huge-page) host allocation for O_DIRECT I/O.
// Move-only; not thread-safe (one owner).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tempokv/status.h"

namespace tempokv {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // Allocates `bytes` (rounded up to 4 KiB) with mmap; huge pages when asked and available
  // (falls back to normal pages). Zero-filled.
  static Result<AlignedBuffer> allocate(size_t bytes, bool huge_pages = false);
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& o) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<std::byte> span() { return {data_, size_}; }
  bool empty() const { return data_ == nullptr; }
  bool huge_pages() const { return huge_; }

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;
  bool huge_ = false;
};

}  // namespace tempokv
