// SlotAllocator: places objects in an arena of equal, 4 KiB-aligned slots (docs/fast-tier.md).
//
// An object of b bytes takes ceil(b / slot_bytes) contiguous slots, chosen best-fit among the free
// runs (the smallest run that fits, lowest address among equals) and taken from the run's start.
// Guarantees (proved in docs/fast-tier.md):
//  * An object of at most one slot is placed whenever any slot is free: allocation never fails
//    for fragmentation. With slot_bytes = the chunk size, that covers every chunk of a prefix,
//    its smaller final chunk included.
//  * With 4 KiB slots and objects all of one size C, every free run starts at a multiple of C and
//    every one but the run at the arena's end is a multiple of C long, so an allocation fails
//    only when fewer than C bytes are free.
// Larger objects in mixed sizes can fail for fragmentation; the caller evicts and retries.
//
// Invariants: free runs never overlap or touch (touching runs are merged); by_start_ and by_len_
// hold the same runs; free_slots_ is their total length. Not thread-safe (one owner: the fast tier
// on the control-plane thread).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace tempokv {

class SlotAllocator {
 public:
  SlotAllocator(uint64_t capacity_bytes, uint64_t slot_bytes);

  // Bytes an object of `bytes` occupies: a whole number of slots.
  uint64_t charge_bytes(uint64_t bytes) const;
  // Offset (a multiple of slot_bytes) of a new allocation of charge_bytes(bytes), or nullopt when
  // no free run is long enough.
  std::optional<uint64_t> allocate(uint64_t bytes);
  // Returns an allocation made by allocate(bytes) at offset.
  void free(uint64_t offset, uint64_t bytes);

  uint64_t free_bytes() const { return free_slots_ * slot_bytes_; }
  uint64_t capacity_bytes() const { return slots_ * slot_bytes_; }
  uint64_t slot_bytes() const { return slot_bytes_; }
  // Length in bytes of the longest free run.
  uint64_t largest_free_bytes() const;
  size_t free_runs() const { return by_start_.size(); }

 private:
  uint64_t slots_for(uint64_t bytes) const;
  void insert_run(uint64_t start, uint64_t len);
  void erase_run(std::map<uint64_t, uint64_t>::iterator it);

  uint64_t slot_bytes_;
  uint64_t slots_;
  uint64_t free_slots_;
  std::map<uint64_t, uint64_t> by_start_;           // start slot -> run length (slots)
  std::set<std::pair<uint64_t, uint64_t>> by_len_;  // (length, start) for best fit
};

}  // namespace tempokv
