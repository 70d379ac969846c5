#include "ssd/fixed_buffer_table.h"

#include <sys/uio.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace tempokv {

Status FixedBufferTable::init(io_uring* ring, uint32_t slots) {
  std::lock_guard<std::mutex> lock(mu_);
  ring_ = ring;
  int rc = io_uring_register_buffers_sparse(ring, slots);
  if (rc < 0) {
    return Status::from_errno(
        -rc, "io_uring_register_buffers_sparse(" + std::to_string(slots) + " slots)");
  }
  enabled_ = true;
  free_slots_.clear();
  for (uint32_t i = slots; i > 0; --i) free_slots_.push_back(static_cast<int>(i - 1));
  return Status::ok();
}

bool FixedBufferTable::enabled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return enabled_;
}

Status FixedBufferTable::add(void* base, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!enabled_) return Status::unavailable("io_uring fixed buffers are not available");
  auto start = reinterpret_cast<uintptr_t>(base);
  auto it = regions_.find(start);
  if (it != regions_.end() && it->second.base == start) return Status::ok();
  std::vector<int> taken;
  for (size_t off = 0; off < bytes; off += kMaxSlotBytes) {
    size_t n = std::min(kMaxSlotBytes, bytes - off);
    Status st;
    if (free_slots_.empty()) {
      st = Status::resource_exhausted("io_uring fixed buffer table is full");
    } else {
      int slot = free_slots_.back();
      iovec iov{static_cast<char*>(base) + off, n};
      __u64 tag = 0;
      int rc =
          io_uring_register_buffers_update_tag(ring_, static_cast<unsigned>(slot), &iov, &tag, 1);
      if (rc < 0) {
        st = Status::from_errno(-rc, "registering buffer of " + std::to_string(n) +
                                         " bytes with io_uring (RLIMIT_MEMLOCK?)");
      } else {
        free_slots_.pop_back();
        taken.push_back(slot);
        regions_[start + off] = Region{start + off + n, start, slot};
      }
    }
    if (!st.is_ok()) {
      for (size_t i = 0; i < taken.size(); ++i) {
        regions_.erase(start + i * kMaxSlotBytes);
        clear_slot_locked(taken[i]);
      }
      return st;
    }
  }
  return Status::ok();
}

void FixedBufferTable::remove(void* base) {
  std::lock_guard<std::mutex> lock(mu_);
  auto start = reinterpret_cast<uintptr_t>(base);
  for (auto it = regions_.lower_bound(start); it != regions_.end() && it->second.base == start;) {
    clear_slot_locked(it->second.slot);
    it = regions_.erase(it);
  }
}

int FixedBufferTable::find(const void* buf, size_t len) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (regions_.empty()) return -1;
  auto addr = reinterpret_cast<uintptr_t>(buf);
  auto it = regions_.upper_bound(addr);
  if (it == regions_.begin()) return -1;
  --it;
  return addr + len <= it->second.end ? it->second.slot : -1;
}

void FixedBufferTable::clear_slot_locked(int slot) {
  // An empty iovec clears the slot; requests still using the old buffer keep it pinned.
  iovec iov{nullptr, 0};
  __u64 tag = 0;
  [[maybe_unused]] int rc =
      io_uring_register_buffers_update_tag(ring_, static_cast<unsigned>(slot), &iov, &tag, 1);
  free_slots_.push_back(slot);
}

}  // namespace tempokv
