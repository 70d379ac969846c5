// FlatIdMap<V>: a hash map from 64-bit ids to values, for per-step lookups of every live request
// (thousands a step), where a node-based map costs a cache miss or two per lookup. The values lie
// in one dense vector (in insertion order until an erase); an open-addressed table of
// (id, position) pairs (linear probing, at most half full, backward-shift deletion: no
// tombstones) finds them.
//
// Invalidation: an insert may reallocate the values, and an erase moves the last value into the
// erased one's place; pointers and references to values hold only until the next insert or erase.
// Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tempokv {

template <typename V>
class FlatIdMap {
 public:
  FlatIdMap() : slots_(kMinSlots), shift_(64 - kMinBits) {}

  V* find(uint64_t id) {
    const size_t s = slot_of(id);
    return slots_[s].pos == kEmpty ? nullptr : &values_[slots_[s].pos];
  }
  const V* find(uint64_t id) const { return const_cast<FlatIdMap*>(this)->find(id); }
  bool contains(uint64_t id) const { return find(id) != nullptr; }
  // The value under id, inserted default-constructed when absent.
  V& operator[](uint64_t id) {
    size_t s = slot_of(id);
    if (slots_[s].pos != kEmpty) return values_[slots_[s].pos];
    if (2 * (values_.size() + 1) > slots_.size()) {
      grow();
      s = slot_of(id);
    }
    slots_[s] = {id, static_cast<uint32_t>(values_.size())};
    ids_.push_back(id);
    return values_.emplace_back();
  }
  // False when id is absent.
  bool erase(uint64_t id) {
    size_t s = slot_of(id);
    const uint32_t pos = slots_[s].pos;
    if (pos == kEmpty) return false;
    remove_slot(s);
    const uint32_t last = static_cast<uint32_t>(values_.size() - 1);
    if (pos != last) {
      values_[pos] = std::move(values_[last]);
      ids_[pos] = ids_[last];
      slots_[slot_of(ids_[pos])].pos = pos;
    }
    values_.pop_back();
    ids_.pop_back();
    return true;
  }
  size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  static constexpr int kMinBits = 4;
  static constexpr size_t kMinSlots = size_t{1} << kMinBits;
  struct Slot {
    uint64_t id = 0;
    uint32_t pos = kEmpty;
  };

  size_t home(uint64_t id) const { return (id * 0x9E3779B97F4A7C15ull) >> shift_; }
  // The slot holding id, or the empty slot where it would go.
  size_t slot_of(uint64_t id) const {
    const size_t mask = slots_.size() - 1;
    size_t s = home(id);
    while (slots_[s].pos != kEmpty && slots_[s].id != id) s = (s + 1) & mask;
    return s;
  }
  // Empties slot s and shifts back the entries of its probe run that may move into the gap.
  void remove_slot(size_t s) {
    const size_t mask = slots_.size() - 1;
    for (size_t next = (s + 1) & mask; slots_[next].pos != kEmpty; next = (next + 1) & mask) {
      const size_t h = home(slots_[next].id);
      // The entry at `next` may fill the gap at s unless its home lies cyclically in (s, next].
      if (((next - h) & mask) >= ((next - s) & mask)) {
        slots_[s] = slots_[next];
        s = next;
      }
    }
    slots_[s] = Slot{};
  }
  void grow() {
    slots_.assign(slots_.size() * 2, Slot{});
    --shift_;
    for (uint32_t pos = 0; pos < ids_.size(); ++pos) slots_[slot_of(ids_[pos])] = {ids_[pos], pos};
  }

  std::vector<Slot> slots_;    // a power of two, at most half full
  int shift_;                  // 64 − log2(slots_.size())
  std::vector<uint64_t> ids_;  // ids_[i] is values_[i]'s id
  std::vector<V> values_;
};

}  // namespace tempokv
