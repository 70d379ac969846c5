#include "fasttier/fast_tier.h"

#include <cassert>
#include <string>
#include <utility>

#include "common/units.h"

namespace tempokv {

namespace {
bool pinned(const FastObject& o) {
  bool budget = o.protect_count > 0 || o.reserved;
  return !budget && (o.residency == Residency::kFilling || o.holds > 0);
}
}  // namespace

Result<std::unique_ptr<FastTier>> FastTier::create(const FastTierOptions& options) {
  TEMPOKV_RETURN_IF_ERROR(options.validate());
  TEMPOKV_ASSIGN_OR_RETURN(std::unique_ptr<Backing> backing, make_backing(options));
  return std::unique_ptr<FastTier>(new FastTier(options, std::move(backing)));
}

FastTier::FastTier(FastTierOptions options, std::unique_ptr<Backing> backing)
    : options_(std::move(options)),
      backing_(std::move(backing)),
      alloc_(options_.capacity_bytes, options_.slot_bytes),
      eviction_(make_lru_policy()) {}

FastTier::Contribution FastTier::contribution(const FastObject& o) {
  Contribution c;
  c.objects = 1;
  if (o.residency == Residency::kResident) {
    c.resident = o.charge_bytes;
    c.resident_objects = 1;
  }
  if (o.residency == Residency::kFilling) c.filling = o.charge_bytes;
  if (o.protect_count > 0)
    c.protected_ = o.charge_bytes;
  else if (o.reserved)
    c.reserved = o.charge_bytes;
  if (pinned(o)) c.pinned = o.charge_bytes;
  if (evictable(o)) c.evictable = o.charge_bytes;
  return c;
}

void FastTier::apply(const Contribution& c, int sign) {
  auto add = [sign](uint64_t& v, uint64_t d) { v = sign > 0 ? v + d : v - d; };
  add(stats_.resident_bytes, c.resident);
  add(stats_.filling_bytes, c.filling);
  add(stats_.protected_bytes, c.protected_);
  add(stats_.reserved_bytes, c.reserved);
  add(stats_.pinned_bytes, c.pinned);
  add(stats_.evictable_bytes, c.evictable);
  add(stats_.objects, c.objects);
  add(stats_.resident_objects, c.resident_objects);
}

bool FastTier::evictable(const FastObject& o) {
  return o.residency == Residency::kResident && o.protect_count == 0 && !o.reserved && o.holds == 0;
}

template <typename Fn>
void FastTier::update(const Key& key, FastObject& o, Fn&& fn) {
  const uint64_t budgeted_before = stats_.protected_bytes + stats_.reserved_bytes;
  const uint64_t occupied_before = budgeted_before + stats_.pinned_bytes;
  bool was_evictable = evictable(o);
  const bool budgeted_was = budgeted(o);
  const bool occupied_was = budgeted_was || pinned(o);
  const bool held_before = o.residency != Residency::kAbsent;
  const uint64_t offset_before = o.offset;
  apply(contribution(o), -1);
  fn(o);
  apply(contribution(o), +1);
  const uint64_t entered_budget = !budgeted_was && budgeted(o) ? o.charge_bytes : 0;
  const uint64_t entered_occupied =
      !occupied_was && (budgeted(o) || pinned(o)) ? o.charge_bytes : 0;
  const bool held_after = o.residency != Residency::kAbsent;
  if (held_before && (!held_after || o.offset != offset_before)) by_offset_.erase(offset_before);
  if (held_after && (!held_before || o.offset != offset_before)) by_offset_.emplace(o.offset, key);
  bool is_evictable = evictable(o);
  if (was_evictable && !is_evictable) eviction_->erase(key);
  if (!was_evictable && is_evictable) eviction_->insert(key);
  if (o.residency == Residency::kAbsent && !o.reserved) {
    apply(contribution(o), -1);
    objects_.erase(Key(key));  // key may alias the map's own key: erase by a copy
  }
  const uint64_t budgeted_after = stats_.protected_bytes + stats_.reserved_bytes;
  if (budgeted_after < budgeted_before) budget_freed_bytes_ += budgeted_before - budgeted_after;
  const uint64_t occupied_after = budgeted_after + stats_.pinned_bytes;
  if (occupied_after < occupied_before) capacity_freed_bytes_ += occupied_before - occupied_after;
  if (budget_listener_ && budgeted_after != budgeted_before) budget_listener_(budgeted_after);
  if (entry_listener_ && (entered_budget > 0 || entered_occupied > 0)) {
    entry_listener_(key, entered_budget, entered_occupied);
  }
}

const FastObject* FastTier::find(const Key& key) const {
  auto it = objects_.find(key);
  return it == objects_.end() ? nullptr : &it->second;
}

bool FastTier::resident(const Key& key) const {
  const FastObject* o = find(key);
  return o && o->residency == Residency::kResident;
}

std::byte* FastTier::data(const Key& key) {
  const FastObject* o = find(key);
  if (!o || o->residency == Residency::kAbsent || backing_->base() == nullptr) return nullptr;
  return backing_->base() + o->offset;
}

bool FastTier::use(const Key& key) {
  if (resident(key)) {
    ++stats_.hits;
    eviction_->touch(key);
    return true;
  }
  ++stats_.misses;
  return false;
}

void FastTier::add_protect_cost(const Key& key, uint64_t object_bytes, ProtectCost& cost) const {
  const FastObject* o = find(key);
  if (o && budgeted(*o)) return;
  uint64_t charge = o ? o->charge_bytes : charge_bytes(object_bytes);
  cost.budget_bytes += charge;
  if (!(o && pinned(*o))) cost.occupied_bytes += charge;
}

bool FastTier::budget_short(const ProtectCost& cost) const { return budget_shortfall(cost) > 0; }

uint64_t FastTier::budget_shortfall(const ProtectCost& cost) const {
  const uint64_t need = stats_.protected_bytes + stats_.reserved_bytes + cost.budget_bytes;
  return need > options_.protected_budget_bytes ? need - options_.protected_budget_bytes : 0;
}

uint64_t FastTier::capacity_shortfall(const ProtectCost& cost) const {
  const uint64_t need =
      stats_.protected_bytes + stats_.reserved_bytes + stats_.pinned_bytes + cost.occupied_bytes;
  return need > options_.capacity_bytes ? need - options_.capacity_bytes : 0;
}

Status FastTier::check_protect_cost(const ProtectCost& cost) const {
  uint64_t used = stats_.protected_bytes + stats_.reserved_bytes;
  uint64_t budget = options_.protected_budget_bytes;
  if (used + cost.budget_bytes > budget) {
    return Status::resource_exhausted(
        "protected budget: needs " + std::to_string(cost.budget_bytes) + " bytes (" +
        format_bytes(cost.budget_bytes) + "), " + std::to_string(budget - used) +
        " bytes available (" + format_bytes(budget - used) + " of " + format_bytes(budget) + ")");
  }
  uint64_t occupied = used + stats_.pinned_bytes;
  uint64_t cap = options_.capacity_bytes;
  if (occupied + cost.occupied_bytes > cap) {
    uint64_t avail = occupied >= cap ? 0 : cap - occupied;
    return Status::resource_exhausted(
        "fast-tier capacity: needs " + std::to_string(cost.occupied_bytes) + " bytes (" +
        format_bytes(cost.occupied_bytes) + ") not pinned by reads or copies, " +
        std::to_string(avail) + " bytes available (" + format_bytes(avail) + ")");
  }
  return Status::ok();
}

Status FastTier::reserve(const Key& key, uint64_t object_bytes) {
  auto it = objects_.find(key);
  if (it != objects_.end() &&
      (it->second.residency == Residency::kResident || budgeted(it->second))) {
    return Status::failed_precondition("reserve of " + key.to_string() +
                                       ": already resident or counted in the budget");
  }
  ProtectCost cost;
  add_protect_cost(key, object_bytes, cost);
  TEMPOKV_RETURN_IF_ERROR(check_protect_cost(cost));
  if (it == objects_.end()) {
    FastObject fresh;
    fresh.object_bytes = object_bytes;
    fresh.charge_bytes = charge_bytes(object_bytes);
    it = objects_.emplace(key, fresh).first;
    apply(contribution(it->second), +1);
  }
  update(key, it->second, [](FastObject& o) { o.reserved = true; });
  return Status::ok();
}

void FastTier::unreserve(const Key& key) {
  auto it = objects_.find(key);
  assert(it != objects_.end() && it->second.reserved);
  if (it == objects_.end()) return;
  update(key, it->second, [](FastObject& o) { o.reserved = false; });
}

Status FastTier::protect(const Key& key) {
  auto it = objects_.find(key);
  if (it == objects_.end() || it->second.residency != Residency::kResident) {
    return Status::failed_precondition("protect of " + key.to_string() + ": not resident");
  }
  if (!budgeted(it->second)) {
    ProtectCost cost;
    add_protect_cost(key, it->second.object_bytes, cost);
    TEMPOKV_RETURN_IF_ERROR(check_protect_cost(cost));
  }
  update(key, it->second, [](FastObject& o) {
    ++o.protect_count;
    o.reserved = false;
  });
  return Status::ok();
}

void FastTier::unprotect(const Key& key) {
  auto it = objects_.find(key);
  assert(it != objects_.end() && it->second.protect_count > 0);
  if (it == objects_.end()) return;
  update(key, it->second, [](FastObject& o) { --o.protect_count; });
}

Status FastTier::hold(const Key& key) {
  auto it = objects_.find(key);
  if (it == objects_.end() || it->second.residency != Residency::kResident) {
    return Status::failed_precondition("hold of " + key.to_string() + ": not resident");
  }
  update(key, it->second, [](FastObject& o) { ++o.holds; });
  return Status::ok();
}

void FastTier::unhold(const Key& key) {
  auto it = objects_.find(key);
  assert(it != objects_.end() && it->second.holds > 0);
  if (it == objects_.end()) return;
  update(key, it->second, [](FastObject& o) { --o.holds; });
}

void FastTier::evict_one(const Key& victim) {
  auto it = objects_.find(victim);
  assert(it != objects_.end() && evictable(it->second));
  alloc_.free(it->second.offset, it->second.object_bytes);
  ++stats_.evictions;
  stats_.evicted_bytes += it->second.charge_bytes;
  update(victim, it->second, [](FastObject& o) { o.residency = Residency::kAbsent; });
  if (eviction_listener_) eviction_listener_(victim);
}

Result<uint64_t> FastTier::begin_fill(const Key& key, uint64_t object_bytes) {
  auto it = objects_.find(key);
  if (it != objects_.end() && it->second.residency != Residency::kAbsent) {
    return Status::failed_precondition("fill of " + key.to_string() + ": not absent");
  }
  if (it != objects_.end() && it->second.object_bytes != object_bytes) {
    return Status::invalid_argument("fill of " + key.to_string() + ": " +
                                    std::to_string(object_bytes) + " bytes, reserved as " +
                                    std::to_string(it->second.object_bytes));
  }
  uint64_t charge = charge_bytes(object_bytes);
  if (it == objects_.end() || !budgeted(it->second)) {
    ProtectCost cost{0, charge};
    uint64_t occupied = stats_.protected_bytes + stats_.reserved_bytes + stats_.pinned_bytes;
    if (occupied + cost.occupied_bytes > options_.capacity_bytes) {
      return Status::resource_exhausted("fill of " + format_bytes(charge) +
                                        ": fast tier is occupied by protected, reserved, filling "
                                        "or held objects");
    }
  }
  // Evict only when eviction can make room, so a refusal evicts nothing.
  if (alloc_.free_bytes() + stats_.evictable_bytes < charge) {
    return Status::resource_exhausted("fill of " + format_bytes(charge) + ": only " +
                                      format_bytes(alloc_.free_bytes() + stats_.evictable_bytes) +
                                      " free or evictable");
  }
  std::optional<uint64_t> offset = alloc_.allocate(object_bytes);
  if (!offset) {
    // Enough bytes, but maybe not in one run: evict only the objects of the window that frees
    // one (fast_tier_evict.cc), or nothing at all when pinned objects break up every window.
    std::optional<std::vector<Key>> victims = plan_eviction(charge);
    if (!victims) {
      ++stats_.fragmented_fills;
      return Status::resource_exhausted(
          "fill of " + format_bytes(charge) + ": no run of free or evictable space long enough (" +
          format_bytes(alloc_.free_bytes() + stats_.evictable_bytes) + " free or evictable, " +
          "split by protected, reserved, filling or held objects; largest free run " +
          format_bytes(alloc_.largest_free_bytes()) + ")");
    }
    for (const Key& victim : *victims) evict_one(victim);
    offset = alloc_.allocate(object_bytes);
    assert(offset && "the planned window is free");
    if (!offset) return Status::internal("fill of " + format_bytes(charge) + ": planned window");
  }
  if (it == objects_.end()) {
    it = objects_.emplace(key, FastObject{}).first;
    it->second.reserved = false;
    apply(contribution(it->second), +1);
  }
  update(key, it->second, [&](FastObject& o) {
    o.residency = Residency::kFilling;
    o.offset = *offset;
    o.object_bytes = object_bytes;
    o.charge_bytes = charge;
  });
  return *offset;
}

bool FastTier::discard(const Key& key) {
  auto it = objects_.find(key);
  if (it == objects_.end() || !evictable(it->second)) return false;
  evict_one(key);
  return true;
}

void FastTier::end_fill(const Key& key, bool ok, uint64_t generation) {
  auto it = objects_.find(key);
  assert(it != objects_.end() && it->second.residency == Residency::kFilling);
  if (it == objects_.end()) return;
  if (!ok) {
    ++stats_.fill_failures;
    alloc_.free(it->second.offset, it->second.object_bytes);
  }
  update(key, it->second, [ok, generation](FastObject& o) {
    o.residency = ok ? Residency::kResident : Residency::kAbsent;
    o.generation = ok ? generation : 0;
  });
}

FastTierStats FastTier::stats() const {
  FastTierStats s = stats_;
  s.capacity_bytes = options_.capacity_bytes;
  s.budget_bytes = options_.protected_budget_bytes;
  return s;
}

}  // namespace tempokv
