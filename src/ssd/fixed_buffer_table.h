// FixedBufferTable: the io_uring registered-buffer table of one ring, and the lookup from a
// transfer's address to the table slot that holds it.
//
// The kernel table is created sparse (io_uring_register_buffers_sparse) and slots are filled and
// cleared one at a time with io_uring_register_buffers_update_tag. Unlike
// io_uring_register_buffers, an update replaces one slot without quiescing the ring, so buffers
// can be added and removed while other transfers are in flight (the kernel keeps a replaced
// buffer pinned until the requests that use it complete). A region larger than kMaxSlotBytes
// takes several slots; a transfer that straddles two slots is done unregistered.
//
// Thread-safe (one mutex). The ring is not owned and must outlive the table.
#pragma once

#include <liburing.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "tempokv/status.h"

namespace tempokv {

class FixedBufferTable {
 public:
  // The kernel refuses single registered buffers over 1 GiB.
  static constexpr size_t kMaxSlotBytes = size_t{1} << 30;

  // Creates the sparse table of `slots` entries. An error (old kernel, no memory) leaves the
  // table disabled: find() then always answers -1.
  Status init(io_uring* ring, uint32_t slots);
  bool enabled() const;

  // Registers [base, base+bytes). Registering a base already registered is a no-op. On error
  // (RLIMIT_MEMLOCK, out of slots) nothing stays registered and the Status says why.
  Status add(void* base, size_t bytes);
  void remove(void* base);
  // The slot whose buffer holds all of [buf, buf+len), or -1.
  int find(const void* buf, size_t len) const;

 private:
  struct Region {
    uintptr_t end;
    uintptr_t base;  // the base passed to add(), shared by the slots of one region
    int slot;
  };
  void clear_slot_locked(int slot);

  mutable std::mutex mu_;
  io_uring* ring_ = nullptr;
  bool enabled_ = false;
  std::map<uintptr_t, Region> regions_;  // keyed by start address
  std::vector<int> free_slots_;
};

}  // namespace tempokv
