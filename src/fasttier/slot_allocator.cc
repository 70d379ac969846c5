#include "fasttier/slot_allocator.h"

#include <cassert>

namespace tempokv {

SlotAllocator::SlotAllocator(uint64_t capacity_bytes, uint64_t slot_bytes)
    : slot_bytes_(slot_bytes), slots_(capacity_bytes / slot_bytes), free_slots_(0) {
  if (slots_ > 0) insert_run(0, slots_);
}

uint64_t SlotAllocator::slots_for(uint64_t bytes) const {
  return bytes == 0 ? 1 : (bytes + slot_bytes_ - 1) / slot_bytes_;
}

uint64_t SlotAllocator::charge_bytes(uint64_t bytes) const {
  return slots_for(bytes) * slot_bytes_;
}

void SlotAllocator::insert_run(uint64_t start, uint64_t len) {
  by_start_.emplace(start, len);
  by_len_.emplace(len, start);
  free_slots_ += len;
}

void SlotAllocator::erase_run(std::map<uint64_t, uint64_t>::iterator it) {
  by_len_.erase({it->second, it->first});
  free_slots_ -= it->second;
  by_start_.erase(it);
}

std::optional<uint64_t> SlotAllocator::allocate(uint64_t bytes) {
  uint64_t need = slots_for(bytes);
  auto fit = by_len_.lower_bound({need, 0});
  if (fit == by_len_.end()) return std::nullopt;
  uint64_t start = fit->second;
  uint64_t len = fit->first;
  erase_run(by_start_.find(start));
  // Taking the run's start keeps the remainder's alignment to the object size (the 4 KiB
  // equal-size guarantee of the header depends on it).
  if (len > need) insert_run(start + need, len - need);
  return start * slot_bytes_;
}

void SlotAllocator::free(uint64_t offset, uint64_t bytes) {
  assert(offset % slot_bytes_ == 0);
  uint64_t start = offset / slot_bytes_;
  uint64_t len = slots_for(bytes);
  auto next = by_start_.lower_bound(start);
  if (next != by_start_.end() && next->first == start + len) {
    len += next->second;
    erase_run(next);
  }
  auto after = by_start_.lower_bound(start);
  if (after != by_start_.begin()) {
    auto prev = std::prev(after);
    assert(prev->first + prev->second <= start && "double free in SlotAllocator");
    if (prev->first + prev->second == start) {
      start = prev->first;
      len += prev->second;
      erase_run(prev);
    }
  }
  insert_run(start, len);
}

uint64_t SlotAllocator::largest_free_bytes() const {
  return by_len_.empty() ? 0 : by_len_.rbegin()->first * slot_bytes_;
}

}  // namespace tempokv
