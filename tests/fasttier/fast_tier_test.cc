#include "fasttier/fast_tier.h"

#include <gtest/gtest.h>

#include "common/units.h"

namespace tempokv {
namespace {

constexpr uint64_t kObj = 16 * kMiB;

Key key(uint64_t i) { return Key{1, i}; }

std::unique_ptr<FastTier> make_tier(uint64_t capacity = 8 * kObj, uint64_t budget = 4 * kObj,
                                    uint64_t slot = kObj) {
  FastTierOptions o;
  o.capacity_bytes = capacity;
  o.protected_budget_bytes = budget;
  o.slot_bytes = slot;
  o.backing = BackingKind::kMetadata;
  auto tier = FastTier::create(o);
  EXPECT_TRUE(tier.is_ok()) << tier.status().to_string();
  return std::move(tier).value();
}

void fill(FastTier& t, const Key& k, uint64_t bytes = kObj) {
  ASSERT_TRUE(t.begin_fill(k, bytes).is_ok());
  t.end_fill(k, true, 1);
}

TEST(FastTier, FillMakesAnObjectResidentAndEvictable) {
  auto t = make_tier();
  auto off = t->begin_fill(key(1), kObj);
  ASSERT_TRUE(off.is_ok());
  EXPECT_EQ(t->find(key(1))->residency, Residency::kFilling);
  EXPECT_EQ(t->stats().pinned_bytes, kObj);
  t->end_fill(key(1), true, 1);
  EXPECT_TRUE(t->resident(key(1)));
  EXPECT_EQ(t->stats().resident_bytes, kObj);
  EXPECT_EQ(t->stats().evictable_bytes, kObj);
  EXPECT_EQ(t->stats().pinned_bytes, 0u);
  EXPECT_TRUE(t->check_invariants().is_ok());
}

TEST(FastTier, FailedFillFreesItsMemory) {
  auto t = make_tier();
  ASSERT_TRUE(t->begin_fill(key(1), kObj).is_ok());
  t->end_fill(key(1), false, 1);
  EXPECT_EQ(t->find(key(1)), nullptr);
  EXPECT_EQ(t->stats().filling_bytes, 0u);
  EXPECT_EQ(t->stats().fill_failures, 1u);
  EXPECT_TRUE(t->check_invariants().is_ok());
}

TEST(FastTier, AFillRecordsTheStoreGenerationOfItsBytes) {
  auto t = make_tier();
  ASSERT_TRUE(t->begin_fill(key(1), kObj).is_ok());
  t->end_fill(key(1), true, 42);
  EXPECT_EQ(t->find(key(1))->generation, 42u);
}

TEST(FastTier, DiscardEvictsAnEvictableCopyAndLeavesOneInUse) {
  auto t = make_tier();
  fill(*t, key(1));
  fill(*t, key(2));
  ASSERT_TRUE(t->protect(key(2)).is_ok());
  fill(*t, key(3));
  ASSERT_TRUE(t->hold(key(3)).is_ok());
  int told = 0;
  t->set_eviction_listener([&](const Key&) { ++told; });
  EXPECT_TRUE(t->discard(key(1)));
  EXPECT_EQ(t->find(key(1)), nullptr);
  EXPECT_FALSE(t->discard(key(2))) << "a protected copy was dropped under its claim";
  EXPECT_FALSE(t->discard(key(3))) << "a held copy was dropped under its reader";
  EXPECT_FALSE(t->discard(key(9)));
  EXPECT_TRUE(t->resident(key(2)));
  EXPECT_TRUE(t->resident(key(3)));
  EXPECT_EQ(told, 1);
  EXPECT_TRUE(t->check_invariants().is_ok());
}

TEST(FastTier, EvictsLeastRecentlyUsedFirst) {
  auto t = make_tier(4 * kObj, 2 * kObj);
  for (uint64_t i = 1; i <= 4; ++i) fill(*t, key(i));
  EXPECT_TRUE(t->use(key(1)));  // 2 is now the least recently used
  fill(*t, key(5));
  EXPECT_FALSE(t->resident(key(2)));
  EXPECT_TRUE(t->resident(key(1)));
  EXPECT_EQ(t->stats().evictions, 1u);
  EXPECT_EQ(t->stats().evicted_bytes, kObj);
}

TEST(FastTier, NeverEvictsAProtectedObject) {
  auto t = make_tier(4 * kObj, 2 * kObj);
  for (uint64_t i = 1; i <= 4; ++i) fill(*t, key(i));
  ASSERT_TRUE(t->protect(key(1)).is_ok());  // the LRU head, protected
  for (uint64_t i = 5; i <= 20; ++i) fill(*t, key(i));
  EXPECT_TRUE(t->resident(key(1)));
  EXPECT_EQ(t->find(key(1))->protect_count, 1u);
  EXPECT_TRUE(t->check_invariants().is_ok());
}

TEST(FastTier, NeverEvictsAHeldObject) {
  auto t = make_tier(4 * kObj, 2 * kObj);
  for (uint64_t i = 1; i <= 4; ++i) fill(*t, key(i));
  ASSERT_TRUE(t->hold(key(1)).is_ok());
  fill(*t, key(5));
  EXPECT_TRUE(t->resident(key(1)));
  t->unhold(key(1));
  EXPECT_EQ(t->stats().evictable_bytes, 4 * kObj);
}

TEST(FastTier, ReleasedProtectionLeavesTheObjectAsCache) {
  auto t = make_tier();
  fill(*t, key(1));
  ASSERT_TRUE(t->protect(key(1)).is_ok());
  ASSERT_TRUE(t->protect(key(1)).is_ok());
  EXPECT_EQ(t->stats().protected_bytes, kObj);  // two protections, counted once
  t->unprotect(key(1));
  EXPECT_EQ(t->stats().protected_bytes, kObj);
  t->unprotect(key(1));
  EXPECT_EQ(t->stats().protected_bytes, 0u);
  EXPECT_TRUE(t->resident(key(1)));
  EXPECT_EQ(t->stats().evictable_bytes, kObj);
}

TEST(FastTier, ReservationBecomesProtectionWhenTheReadLands) {
  auto t = make_tier();
  ASSERT_TRUE(t->reserve(key(1), kObj).is_ok());
  EXPECT_EQ(t->stats().reserved_bytes, kObj);
  ASSERT_TRUE(t->begin_fill(key(1), kObj).is_ok());
  EXPECT_EQ(t->stats().reserved_bytes, kObj);
  EXPECT_EQ(t->stats().pinned_bytes, 0u);  // counted in the budget, not twice
  t->end_fill(key(1), true, 1);
  ASSERT_TRUE(t->protect(key(1)).is_ok());
  EXPECT_EQ(t->stats().reserved_bytes, 0u);
  EXPECT_EQ(t->stats().protected_bytes, kObj);
  EXPECT_TRUE(t->check_invariants().is_ok());
}

TEST(FastTier, ProtectBeyondTheBudgetIsRefusedAndChangesNothing) {
  auto t = make_tier(8 * kObj, 2 * kObj);
  for (uint64_t i = 1; i <= 3; ++i) fill(*t, key(i));
  ASSERT_TRUE(t->protect(key(1)).is_ok());
  ASSERT_TRUE(t->reserve(key(9), kObj).is_ok());
  Status st = t->protect(key(2));
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("needs 16777216 bytes"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("0 bytes available"), std::string::npos) << st.message();
  EXPECT_EQ(t->find(key(2))->protect_count, 0u);
  EXPECT_EQ(t->stats().protected_bytes + t->stats().reserved_bytes, 2 * kObj);
  EXPECT_EQ(t->reserve(key(10), kObj).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(t->find(key(10)), nullptr);
}

TEST(FastTier, ProtectCostCountsObjectsAlreadyInTheBudgetOnce) {
  auto t = make_tier();
  fill(*t, key(1));
  fill(*t, key(2));
  ASSERT_TRUE(t->protect(key(1)).is_ok());
  ProtectCost cost;
  t->add_protect_cost(key(1), kObj, cost);  // already protected: free
  t->add_protect_cost(key(2), kObj, cost);  // resident: protect it
  t->add_protect_cost(key(3), kObj, cost);  // absent: reserve it
  EXPECT_EQ(cost.budget_bytes, 2 * kObj);
  EXPECT_EQ(cost.occupied_bytes, 2 * kObj);
}

TEST(FastTier, DemandFillsNeverUseTheBudgetButRespectIt) {
  auto t = make_tier(4 * kObj, 2 * kObj);
  ASSERT_TRUE(t->reserve(key(1), kObj).is_ok());
  ASSERT_TRUE(t->reserve(key(2), kObj).is_ok());
  ASSERT_TRUE(t->begin_fill(key(3), kObj).is_ok());
  ASSERT_TRUE(t->begin_fill(key(4), kObj).is_ok());
  // Reservations plus reads in flight occupy the whole arena: a fifth read must wait, so that the
  // reserved objects always find room.
  EXPECT_EQ(t->begin_fill(key(5), kObj).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(t->stats().protected_bytes + t->stats().reserved_bytes, 2 * kObj);
  ASSERT_TRUE(t->begin_fill(key(1), kObj).is_ok());
  ASSERT_TRUE(t->begin_fill(key(2), kObj).is_ok());
  EXPECT_TRUE(t->check_invariants().is_ok());
}

TEST(FastTier, UseCountsHitsAndMisses) {
  auto t = make_tier();
  fill(*t, key(1));
  EXPECT_TRUE(t->use(key(1)));
  EXPECT_FALSE(t->use(key(2)));
  EXPECT_EQ(t->stats().hits, 1u);
  EXPECT_EQ(t->stats().misses, 1u);
}

TEST(FastTier, ChargesWholeSlotsForSmallFinalChunks) {
  auto t = make_tier(4 * kObj, 2 * kObj);
  for (uint64_t i = 1; i <= 4; ++i) fill(*t, key(i), i == 4 ? 4 * kBlockBytes : kObj);
  EXPECT_EQ(t->stats().resident_bytes, 4 * kObj);
  EXPECT_EQ(t->find(key(4))->charge_bytes, kObj);
}

TEST(FastTier, OptionsValidationNamesTheField) {
  FastTierOptions o;
  o.protected_budget_bytes = o.capacity_bytes;
  EXPECT_NE(o.validate().message().find("protected_budget_bytes"), std::string::npos);
  o = FastTierOptions{};
  o.slot_bytes = 1000;
  EXPECT_NE(o.validate().message().find("slot_bytes"), std::string::npos);
  o = FastTierOptions{};
  o.capacity_bytes = kGiB + kBlockBytes;
  o.slot_bytes = kMiB;
  EXPECT_NE(o.validate().message().find("capacity_bytes"), std::string::npos);
  o = FastTierOptions{};
  o.backing = BackingKind::kFile;
  EXPECT_NE(o.validate().message().find("path"), std::string::npos);
}

}  // namespace
}  // namespace tempokv
