// Owned 4 KiB-aligned host memory for O_DIRECT I/O, in two kinds: AlignedBuffer, mapped (or on
// huge pages), for buffers set up once; AlignedBytes, from the allocator, for the small blocks
// allocated on the data path (a record's header), where a mapping per allocation would cost a
// system call. Both move-only, one owner, not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
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

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<std::byte, FreeDeleter>;
// A zero-filled 4 KiB-aligned allocation of round_up(bytes, 4 KiB) (4 KiB for 0); null when out
// of memory.
AlignedBytes allocate_blocks(size_t bytes);

}  // namespace tempokv
