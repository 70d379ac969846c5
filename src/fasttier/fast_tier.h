// FastTier: the byte arena the GPU retrieves KV from (DESIGN.md §2), and its bookkeeping:
// residency, protection, staging reservations, holds, LRU eviction and the two limits.
//
// Every object (by Key) is in one residency state: absent (no memory; may carry a reservation),
// filling (memory allocated, an SSD read is writing it) or resident. On top of that it has a
// protection count (one per committed claim that needs it stage-ready), a reserved flag (budget
// set aside for staging that has not landed) and a hold count (readers copying out of it).
//
// The two limits, and how they are kept without partitioning the arena:
//  * budget:   protected_bytes + reserved_bytes <= options.protected_budget_bytes. protect() and
//              reserve() refuse (ResourceExhausted) rather than exceed it.
//  * capacity: resident + filling bytes <= capacity, by construction of the allocator. Objects
//              counted in the budget plus "pinned" objects (filling or held, not counted in the
//              budget) never exceed capacity when they are created by reserve/protect/begin_fill,
//              so staging that reserved budget always finds the bytes by evicting. They are in one
//              run whenever every object fits one slot (slot_bytes >= the chunk size, the
//              configuration docs/fast-tier.md recommends); with smaller slots non-evictable
//              objects can split the free space, and begin_fill then refuses (ResourceExhausted,
//              counted in fragmented_fills) without evicting anything, until a release. hold() on
//              a resident object always succeeds (its bytes are already there) and may briefly
//              break that sum; begin_fill then waits for the hold to end (ResourceExhausted).
// Eviction frees exactly one window of the arena: the objects overlapping the bytes the new
// object takes, chosen so that the most recently used of them is as old as possible.
// Evictable = resident, unprotected, unreserved and unheld; only those are evicted, least
// recently used first (EvictionPolicy). Protected, reserved, filling or held objects never are.
//
// Charges: each object occupies (and the budget counts) charge_bytes(object_bytes), whole slots.
// Offsets are multiples of slot_bytes (>= 4 KiB), so data() is an O_DIRECT read target.
//
// Ownership: owns its Backing and allocator. Who protects and why is the provider's business;
// the tier only counts. Threading: control-plane thread only; the bytes of a filling object are
// written by an I/O thread between begin_fill and end_fill.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "fasttier/backing.h"
#include "fasttier/eviction_policy.h"
#include "fasttier/fast_tier_options.h"
#include "fasttier/slot_allocator.h"
#include "tempokv/key.h"
#include "tempokv/status.h"

namespace tempokv {

enum class Residency : uint8_t { kAbsent, kFilling, kResident };

// What the tier knows of one object.
struct FastObject {
  Residency residency = Residency::kAbsent;
  uint64_t offset = 0;         // in the arena; meaningful unless absent
  uint64_t object_bytes = 0;   // length of the object's read (a multiple of 4 KiB)
  uint64_t charge_bytes = 0;   // bytes it occupies or reserves (whole slots)
  uint32_t protect_count = 0;  // claims holding it stage-ready; > 0 only when resident
  uint32_t holds = 0;          // readers copying out of it; only when resident
  bool reserved = false;       // budget set aside for staging that has not landed
  // The store generation (ObjectInfo::generation) of the bytes its fill brought in; meaningful
  // when resident. The provider serves a resident copy only to claims that validated it.
  uint64_t generation = 0;
};

struct FastTierStats {
  uint64_t capacity_bytes = 0;
  uint64_t budget_bytes = 0;
  uint64_t resident_bytes = 0;   // charge of resident objects, protected or not
  uint64_t filling_bytes = 0;    // charge of objects an SSD read is writing
  uint64_t protected_bytes = 0;  // charge of objects with protect_count > 0
  uint64_t reserved_bytes = 0;   // charge of reserved objects not yet protected
  uint64_t pinned_bytes = 0;     // filling or held, outside the budget: not evictable
  uint64_t evictable_bytes = 0;  // resident, unprotected, unreserved, unheld
  uint64_t objects = 0;          // objects with any state (resident, filling or reserved)
  uint64_t resident_objects = 0;
  uint64_t evictions = 0;
  uint64_t evicted_bytes = 0;
  uint64_t hits = 0;    // use() of a resident object
  uint64_t misses = 0;  // use() of an object that was not resident
  uint64_t fill_failures = 0;
  uint64_t fragmented_fills = 0;  // fills refused with enough bytes free or evictable, not in a run
};

// What protecting or reserving a set of objects would add (add_protect_cost()).
struct ProtectCost {
  uint64_t budget_bytes = 0;    // added to protected + reserved
  uint64_t occupied_bytes = 0;  // added to budget + pinned (taken out of what eviction can free)
};

class FastTier {
 public:
  static Result<std::unique_ptr<FastTier>> create(const FastTierOptions& options);
  FastTier(const FastTier&) = delete;
  FastTier& operator=(const FastTier&) = delete;

  const FastTierOptions& options() const { return options_; }
  Backing& backing() { return *backing_; }
  uint64_t charge_bytes(uint64_t object_bytes) const { return alloc_.charge_bytes(object_bytes); }

  // nullptr when the tier knows nothing of key.
  const FastObject* find(const Key& key) const;
  bool resident(const Key& key) const;
  // Start of the object's bytes (resident or filling); nullptr when absent or metadata-only.
  std::byte* data(const Key& key);
  // A reader's lookup: counts a hit or a miss and refreshes the LRU position. True if resident.
  bool use(const Key& key);

  // Adds to `cost` what protecting or reserving key would add (zero when already counted in the
  // budget). The caller deduplicates keys.
  void add_protect_cost(const Key& key, uint64_t object_bytes, ProtectCost& cost) const;
  // OK when `cost` fits both limits; else ResourceExhausted naming bytes needed and available.
  Status check_protect_cost(const ProtectCost& cost) const;

  // Sets aside budget for an absent or filling object (staging on its way). FailedPrecondition
  // when resident or already reserved; ResourceExhausted when it would not fit.
  Status reserve(const Key& key, uint64_t object_bytes);
  void unreserve(const Key& key);
  // Adds one protection to a resident object (a reservation becomes protection).
  Status protect(const Key& key);
  void unprotect(const Key& key);
  // Keeps a resident object from eviction while it is copied out. Always succeeds when resident.
  Status hold(const Key& key);
  void unhold(const Key& key);

  // Allocates room for an SSD read of key (evicting, as needed, the evictable objects of one
  // window); the object becomes filling. Returns the offset. ResourceExhausted, having evicted
  // nothing, when it cannot fit now (retry after a release); FailedPrecondition when key is not
  // absent.
  Result<uint64_t> begin_fill(const Key& key, uint64_t object_bytes);
  // The read finished: resident on success (holding the bytes of store generation `generation`),
  // else its memory is freed (absent).
  void end_fill(const Key& key, bool ok, uint64_t generation);
  // Drops a resident copy that must not be served any more (its store object changed): evicted at
  // once when evictable (true), else left alone (false: protected, reserved or held, its users
  // release it; the caller refuses new users meanwhile). Tells the eviction listener.
  bool discard(const Key& key);

  // Calls fn for every object the tier knows (any order). For checks and reports.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (const auto& [key, object] : objects_) fn(key, object);
  }

  // Called with protected + reserved bytes each time that sum changes (the controller integrates
  // it over time). One listener; replaces the previous one.
  void set_budget_listener(std::function<void(uint64_t budgeted_bytes)> listener) {
    budget_listener_ = std::move(listener);
  }
  // Called with the key of each object evicted (it was resident and is absent now), after the
  // tier's state has changed; it may read the tier but not change it. One listener; replaces the
  // previous one. The controller uses it to wake claims it set aside because every object of
  // theirs was resident.
  void set_eviction_listener(std::function<void(const Key& key)> listener) {
    eviction_listener_ = std::move(listener);
  }
  // Called with the key of each object that enters protected + reserved (budget_bytes: its
  // charge; 0 when it stays outside) or protected + reserved + pinned (occupied_bytes: its charge;
  // 0 likewise), after the tier's state has changed; it may read the tier but not change it. Only
  // such an entry lowers what protecting the object would add (add_protect_cost(): by exactly
  // those bytes), so a claim's cost can fall only with an entry of one of its own objects. One
  // listener; replaces the previous one. The staging provider uses it (StagingProvider::
  // set_entry_listener).
  void set_entry_listener(
      std::function<void(const Key& key, uint64_t budget_bytes, uint64_t occupied_bytes)>
          listener) {
    entry_listener_ = std::move(listener);
  }

  FastTierStats stats() const;
  // check_protect_cost() would refuse this cost for the budget (not only for capacity).
  bool budget_short(const ProtectCost& cost) const;
  // By how many bytes this cost exceeds the budget's room now (0: it fits the budget).
  uint64_t budget_shortfall(const ProtectCost& cost) const;
  // By how many bytes this cost exceeds the capacity's room now: protected + reserved + pinned +
  // cost.occupied_bytes − capacity (0: it fits the capacity).
  uint64_t capacity_shortfall(const ProtectCost& cost) const;
  // What a cost's budget_bytes may be and still fit the budget now: budget − protected − reserved
  // (negative when a hold or a smaller budget left the tier over it).
  int64_t budget_room() const {
    return static_cast<int64_t>(options_.protected_budget_bytes) -
           static_cast<int64_t>(stats_.protected_bytes + stats_.reserved_bytes);
  }
  // The same for a cost's occupied_bytes and the capacity: capacity − protected − reserved −
  // pinned.
  int64_t capacity_room() const {
    return static_cast<int64_t>(options_.capacity_bytes) -
           static_cast<int64_t>(stats_.protected_bytes + stats_.reserved_bytes +
                                stats_.pinned_bytes);
  }
  // The bytes by which protected + reserved has fallen, summed since creation (never falls). A
  // refused cost's shortfall (protected + reserved + its cost − budget) can shrink only by bytes
  // freed since: a protection of one of its objects by someone else takes from the room what it
  // takes from the cost, one of its objects freed adds to both, any other protection only adds.
  // So a refusal short of the budget by S bytes stands until S more bytes have been freed.
  uint64_t budget_freed_bytes() const { return budget_freed_bytes_; }
  // The same for the capacity: the bytes by which protected + reserved + pinned has fallen,
  // summed since creation. A refused cost's capacity shortfall can shrink only by bytes freed
  // since (the same argument, with pinned objects counted beside the budgeted ones).
  uint64_t capacity_freed_bytes() const { return capacity_freed_bytes_; }
  // Recomputes every counter from the objects and checks the invariants above. For tests.
  Status check_invariants() const;
  // For tests: where a fill of `charge` bytes needs eviction (no free run is long enough), the
  // victims of plan_eviction and of the whole-arena reference walk must be the same. Internal
  // error naming both otherwise.
  Status check_eviction_plan(uint64_t charge) const;

 private:
  FastTier(FastTierOptions options, std::unique_ptr<Backing> backing);

  // One object's share of the tier's counters.
  struct Contribution {
    uint64_t resident = 0, filling = 0, protected_ = 0, reserved = 0, pinned = 0, evictable = 0;
    uint64_t objects = 0, resident_objects = 0;
  };
  static Contribution contribution(const FastObject& o);
  void apply(const Contribution& c, int sign);
  // Runs fn on key's object, keeping counters, LRU membership and the map in step.
  template <typename Fn>
  void update(const Key& key, FastObject& o, Fn&& fn);
  static bool evictable(const FastObject& o);
  static bool budgeted(const FastObject& o) { return o.protect_count > 0 || o.reserved; }
  void evict_one(const Key& victim);
  // The evictable objects to evict so that `charge` bytes become one free run: those of the window
  // whose most recently used victim is the least recent (fewest bytes, then lowest address, on a
  // tie). nullopt when every window of that length holds a non-evictable object.
  std::optional<std::vector<Key>> plan_eviction(uint64_t charge) const;
  // The same choice by walking the whole arena in address order (sorted on every call): the
  // reference plan_eviction is tested against.
  std::optional<std::vector<Key>> plan_eviction_reference(uint64_t charge) const;
  // plan_eviction's step for one evictable object v: the best window that contains v and holds
  // only free space and evictable objects no more recent than v.
  std::optional<std::vector<Key>> window_around(const Key& v, uint64_t charge) const;

  FastTierOptions options_;
  std::unique_ptr<Backing> backing_;
  SlotAllocator alloc_;
  std::unique_ptr<EvictionPolicy> eviction_;
  std::unordered_map<Key, FastObject> objects_;
  std::map<uint64_t, Key> by_offset_;  // objects holding memory (filling or resident), by offset
  FastTierStats stats_;
  uint64_t budget_freed_bytes_ = 0;    // budget_freed_bytes()
  uint64_t capacity_freed_bytes_ = 0;  // capacity_freed_bytes()
  std::function<void(uint64_t)> budget_listener_;
  std::function<void(const Key&)> eviction_listener_;
  std::function<void(const Key&, uint64_t, uint64_t)> entry_listener_;
};

}  // namespace tempokv
