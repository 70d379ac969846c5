// CheckedIds: a list of ids its owner checked (looked each up, filtered them) while a change
// counter of its own stood at some value: the same list again, the counter unmoved, needs no new
// check. For the per-step lists of a runtime (its waiting order, its decoders), which repeat from
// one step to the next while no request joins or leaves. The owner bumps its counter whenever
// what a check depends on changes. Not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace tempokv {

class CheckedIds {
 public:
  // `ids` are those last checked, and `changes` is the counter they were checked at.
  bool holds(std::span<const uint64_t> ids, uint64_t changes) const {
    return changes == checked_at_ &&
           std::equal(ids.begin(), ids.end(), ids_.begin(), ids_.end());
  }
  // Until checked() again, holds() is false (a check that fails part way leaves nothing).
  void forget() { checked_at_ = kNone; }
  void checked(std::span<const uint64_t> ids, uint64_t changes) {
    ids_.assign(ids.begin(), ids.end());
    checked_at_ = changes;
  }

 private:
  static constexpr uint64_t kNone = UINT64_MAX;
  std::vector<uint64_t> ids_;
  uint64_t checked_at_ = kNone;
};

}  // namespace tempokv
