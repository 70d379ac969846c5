// Randomized fast tier with a page-granular allocator, mixed object sizes and short final chunks:
// check_invariants after every step, and every begin_fill judged against a brute-force oracle of
// the arena — it succeeds exactly when some window of free or evictable slots is long enough, a
// refusal evicts nothing, and a success evicts only objects inside the bytes it took; before each
// fill, the indexed eviction plan (LRU steps over the address index) chooses exactly the victims
// of the whole-arena reference walk. And what protecting an object would add (add_protect_cost)
// falls only by what the entry listener reports for it in that step (the staging provider's
// bound of a refused claim's share relies on it).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "common/units.h"
#include "fasttier/fast_tier.h"

namespace tempokv {
namespace {

constexpr uint64_t kSlots = 96;

// Longest run of slots that are free or held by evictable objects.
uint64_t longest_freeable_run_bytes(const FastTier& t) {
  std::vector<bool> pinned(kSlots, false);
  t.for_each([&](const Key&, const FastObject& o) {
    if (o.residency == Residency::kAbsent) return;
    bool evictable =
        o.residency == Residency::kResident && o.protect_count == 0 && !o.reserved && o.holds == 0;
    if (evictable) return;
    for (uint64_t s = o.offset / kBlockBytes; s < (o.offset + o.charge_bytes) / kBlockBytes; ++s) {
      pinned[s] = true;
    }
  });
  uint64_t best = 0, run = 0;
  for (bool p : pinned) {
    run = p ? 0 : run + 1;
    best = std::max(best, run);
  }
  return best * kBlockBytes;
}

// Resident objects: key -> (offset, charge).
std::map<Key, std::pair<uint64_t, uint64_t>> resident_extents(const FastTier& t) {
  std::map<Key, std::pair<uint64_t, uint64_t>> out;
  t.for_each([&](const Key& k, const FastObject& o) {
    if (o.residency == Residency::kResident) out[k] = {o.offset, o.charge_bytes};
  });
  return out;
}

TEST(FastTierRandom, FillsSucceedExactlyWhenAWindowExistsAndEvictOnlyInsideIt) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    FastTierOptions o;
    o.capacity_bytes = kSlots * kBlockBytes;
    o.protected_budget_bytes = 40 * kBlockBytes;
    o.slot_bytes = kBlockBytes;
    o.backing = BackingKind::kMetadata;
    auto tier = FastTier::create(o);
    ASSERT_TRUE(tier.is_ok());
    FastTier& t = **tier;
    std::mt19937_64 rng(seed);
    auto pick = [&](uint64_t n) { return n == 0 ? 0 : rng() % n; };
    std::vector<Key> filling, resident;
    uint64_t next_key = 1, refused_with_room = 0, successes = 0;
    std::map<Key, uint64_t> bytes_of;  // the object bytes each key was filled or reserved with
    std::map<Key, ProtectCost> reported;  // the step's entries, summed by key
    t.set_entry_listener([&](const Key& k, uint64_t budget_bytes, uint64_t occupied_bytes) {
      reported[k].budget_bytes += budget_bytes;
      reported[k].occupied_bytes += occupied_bytes;
    });
    // What protecting each object the tier holds would add; an object it does not hold adds its
    // whole charge to both.
    auto costs = [&] {
      std::map<Key, ProtectCost> out;
      t.for_each([&](const Key& k, const FastObject&) {
        t.add_protect_cost(k, bytes_of.at(k), out[k]);
      });
      return out;
    };
    uint64_t entries = 0;
    for (int step = 0; step < 2500; ++step) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " step " + std::to_string(step));
      const std::map<Key, ProtectCost> costs_before = costs();
      reported.clear();
      uint64_t op = pick(10);
      if (op < 4) {  // a chunk of 4 or 8 pages, or a short final chunk of 1-7 pages
        uint64_t pages = pick(3) == 0 ? 1 + pick(7) : (pick(2) ? 4 : 8);
        Key k{seed, next_key++};
        uint64_t evictions = t.stats().evictions;
        auto before = resident_extents(t);
        FastTierStats s = t.stats();
        uint64_t charge = pages * kBlockBytes;
        bytes_of[k] = charge;
        bool budget_room =
            s.protected_bytes + s.reserved_bytes + s.pinned_bytes + charge <= o.capacity_bytes;
        bool feasible = budget_room && longest_freeable_run_bytes(t) >= charge;
        Status plan = t.check_eviction_plan(charge);  // indexed choice == whole-arena walk's
        ASSERT_TRUE(plan.is_ok()) << plan.to_string();
        Result<uint64_t> off = t.begin_fill(k, charge);
        ASSERT_EQ(off.is_ok(), feasible) << off.status().to_string();
        if (!off.is_ok()) {
          EXPECT_EQ(off.status().code(), StatusCode::kResourceExhausted);
          EXPECT_EQ(t.stats().evictions, evictions) << "a refused fill evicted";
          refused_with_room +=
              s.evictable_bytes + (o.capacity_bytes - s.resident_bytes - s.filling_bytes) >= charge;
        } else {
          ++successes;
          auto after = resident_extents(t);
          for (const auto& [victim, extent] : before) {
            if (after.count(victim)) continue;
            bool overlaps = extent.first < *off + charge && extent.first + extent.second > *off;
            EXPECT_TRUE(overlaps) << "evicted an object outside the new one's bytes";
          }
          filling.push_back(k);
        }
      } else if (op < 6 && !filling.empty()) {
        size_t i = pick(filling.size());
        bool ok = pick(8) != 0;
        t.end_fill(filling[i], ok, 1);
        if (ok) resident.push_back(filling[i]);
        filling.erase(filling.begin() + static_cast<long>(i));
      } else if (op == 6 && !resident.empty()) {
        const Key& k = resident[pick(resident.size())];
        if (t.resident(k) && t.find(k)->protect_count == 0)
          (void)t.protect(k);
        else if (t.resident(k))
          t.unprotect(k);
      } else if (op == 7 && !resident.empty()) {
        const Key& k = resident[pick(resident.size())];
        if (t.resident(k) && t.find(k)->holds == 0)
          (void)t.hold(k);
        else if (t.resident(k))
          t.unhold(k);
      } else if (op == 8) {
        Key k{seed, next_key++};
        uint64_t pages = 1 + pick(8);
        bytes_of[k] = pages * kBlockBytes;
        if (t.reserve(k, pages * kBlockBytes).is_ok()) {
          if (pick(2)) {
            t.unreserve(k);
          } else if (t.begin_fill(k, pages * kBlockBytes).is_ok()) {
            filling.push_back(k);
          } else {
            t.unreserve(k);
          }
        }
      } else if (!resident.empty()) {
        (void)t.use(resident[pick(resident.size())]);
      }
      std::erase_if(resident, [&](const Key& k) { return !t.resident(k); });
      Status inv = t.check_invariants();
      ASSERT_TRUE(inv.is_ok()) << inv.to_string();
      const std::map<Key, ProtectCost> costs_after = costs();
      auto cost_of = [&](const std::map<Key, ProtectCost>& c, const Key& k) {
        auto it = c.find(k);
        const uint64_t whole = t.charge_bytes(bytes_of.at(k));
        return it != c.end() ? it->second : ProtectCost{whole, whole};
      };
      for (const auto* side : {&costs_before, &costs_after}) {
        for (const auto& [k, unused] : *side) {
          const ProtectCost before = cost_of(costs_before, k), after = cost_of(costs_after, k);
          const ProtectCost told = reported.count(k) ? reported.at(k) : ProtectCost{};
          ASSERT_LE(before.budget_bytes - std::min(before.budget_bytes, after.budget_bytes),
                    told.budget_bytes) << k.to_string();
          ASSERT_LE(before.occupied_bytes - std::min(before.occupied_bytes, after.occupied_bytes),
                    told.occupied_bytes) << k.to_string();
        }
      }
      entries += reported.size();
    }
    EXPECT_GT(entries, 100u);
    EXPECT_GT(successes, 100u);
    EXPECT_GT(refused_with_room, 0u) << "the run never met fragmentation";
  }
}

}  // namespace
}  // namespace tempokv
