// FastTier::check_invariants: recomputes every counter from the objects. For tests.
#include <string>

#include "common/units.h"
#include "fasttier/fast_tier.h"

namespace tempokv {

Status FastTier::check_invariants() const {
  Contribution sum;
  size_t evictable_count = 0;
  for (const auto& [key, o] : objects_) {
    Contribution c = contribution(o);
    sum.resident += c.resident;
    sum.filling += c.filling;
    sum.protected_ += c.protected_;
    sum.reserved += c.reserved;
    sum.pinned += c.pinned;
    sum.evictable += c.evictable;
    sum.objects += c.objects;
    sum.resident_objects += c.resident_objects;
    std::string k = key.to_string();
    if (o.residency == Residency::kAbsent && !o.reserved) {
      return Status::internal(k + ": absent and unreserved but still tracked");
    }
    if ((o.protect_count > 0 || o.holds > 0) && o.residency != Residency::kResident) {
      return Status::internal(k + ": protected or held while not resident");
    }
    if (o.protect_count > 0 && o.reserved) return Status::internal(k + ": protected and reserved");
    if (evictable(o) != eviction_->contains(key)) {
      return Status::internal(k + ": eviction policy disagrees on evictability");
    }
    if (o.residency != Residency::kAbsent && o.offset % kBlockBytes != 0) {
      return Status::internal(k + ": offset not 4 KiB-aligned");
    }
    evictable_count += evictable(o) ? 1 : 0;
  }
  const FastTierStats& s = stats_;
  if (sum.resident != s.resident_bytes || sum.filling != s.filling_bytes ||
      sum.protected_ != s.protected_bytes || sum.reserved != s.reserved_bytes ||
      sum.pinned != s.pinned_bytes || sum.evictable != s.evictable_bytes ||
      sum.objects != s.objects || sum.resident_objects != s.resident_objects) {
    return Status::internal("fast-tier counters disagree with the objects");
  }
  size_t holding = 0;
  for (const auto& [key, o] : objects_) holding += o.residency != Residency::kAbsent ? 1 : 0;
  if (holding != by_offset_.size()) {
    return Status::internal("the address index holds " + std::to_string(by_offset_.size()) +
                            " objects, " + std::to_string(holding) + " hold memory");
  }
  for (const auto& [offset, key] : by_offset_) {
    auto it = objects_.find(key);
    if (it == objects_.end() || it->second.residency == Residency::kAbsent ||
        it->second.offset != offset) {
      return Status::internal(key.to_string() + ": address index disagrees with the object");
    }
  }
  if (evictable_count != eviction_->size()) {
    return Status::internal("eviction policy holds objects the tier does not");
  }
  if (s.protected_bytes + s.reserved_bytes > options_.protected_budget_bytes) {
    return Status::internal("protected + reserved bytes exceed the budget");
  }
  if (s.resident_bytes + s.filling_bytes + alloc_.free_bytes() != alloc_.capacity_bytes()) {
    return Status::internal("allocated bytes disagree with the allocator");
  }
  if (s.resident_bytes + s.filling_bytes > options_.capacity_bytes) {
    return Status::internal("resident + filling bytes exceed capacity");
  }
  return Status::ok();
}

}  // namespace tempokv
