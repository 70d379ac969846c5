// WriteRegion: one runtime's shared file its clients stage new KV in before a put
// (docs/protocol.md, "Shared memory"). Each runtime has its own, made at its first reserve_write
// under a random name in a directory only the daemon may list, so another tenant can neither
// find nor change the bytes a runtime put. The daemon maps it read-write, hands out 4 KiB-aligned
// reservations, and writes a reservation's bytes into the store from where the client put them.
//
// The file is `bytes` long but backed only up to allocated(): a reservation that ends beyond is
// backed first (allocate(), blocking), so a full /dev/shm is a clear error at reserve_write, not a
// SIGBUS in a client later, and a runtime that writes little holds little memory.
//
// Invariants: reservations never overlap (SlotAllocator with 4 KiB slots); live_ holds exactly
// the reservations not yet released; used_bytes() is their total charge.
//
// Ownership: owns the mapping and the file, which its destructor unmaps and removes. Threading:
// create(), allocate() and the destructor block on the file system: call them off the control
// thread (ServiceCore runs them on its job threads); everything else on the daemon's Executor.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "fasttier/slot_allocator.h"
#include "tempokv/status.h"

namespace tempokv::service {

class WriteRegion {
 public:
  // Creates and maps `path`, `bytes` long (a multiple of 4 KiB) and not yet backed: 0600, or
  // 0660 owned by `group`. An existing file is refused (create_shared_file), never replaced.
  static Result<std::unique_ptr<WriteRegion>> create(const std::string& path, uint64_t bytes,
                                                     std::optional<uint32_t> group = {});
  ~WriteRegion();
  WriteRegion(const WriteRegion&) = delete;
  WriteRegion& operator=(const WriteRegion&) = delete;

  // A reservation of `bytes` (> 0): its offset. ResourceExhausted when no free run fits now.
  Result<uint64_t> reserve(uint64_t bytes);
  // Ends the reservation at offset (no-op when there is none).
  void release(uint64_t offset);
  // The bytes reserved at offset, nullopt when offset is not a reservation.
  std::optional<uint64_t> reserved(uint64_t offset) const;
  const std::byte* data(uint64_t offset) const { return base_ + offset; }

  // Backs the file with memory up to `end` (posix_fallocate). Blocking; any thread.
  Status allocate(uint64_t end) const;
  // Bytes known to be backed (set_allocated records an allocate() that succeeded).
  uint64_t allocated() const { return allocated_; }
  void set_allocated(uint64_t end) { allocated_ = std::max(allocated_, end); }

  const std::string& path() const { return path_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t used_bytes() const { return bytes_ - alloc_.free_bytes(); }
  uint64_t reservations() const { return live_.size(); }

 private:
  WriteRegion(std::string path, uint64_t bytes, std::byte* base)
      : path_(std::move(path)), bytes_(bytes), base_(base), alloc_(bytes, 4096) {}

  std::string path_;
  uint64_t bytes_;
  std::byte* base_;
  uint64_t allocated_ = 0;
  SlotAllocator alloc_;
  std::unordered_map<uint64_t, uint64_t> live_;  // offset -> reserved bytes
};

}  // namespace tempokv::service
