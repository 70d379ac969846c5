// Ordinary room is all-or-nothing (issue 11 item 6): two ordinary claims never each hold part of
// the tier while waiting for room the other holds. One 64 MiB object alone takes 62.5 ms.
#include <gtest/gtest.h>

#include "provider/sim_fixture.h"

namespace tempokv::testing {
namespace {

constexpr SimStackOptions kFourSlots{.capacity_objects = 4, .budget_objects = 2,
                                     .max_reads_in_flight = 1};

// Leaves 1, 2, 4, 5 in the four slots as evictable cache, least recently used first.
void fill_cache(SimStack& s) {
  ASSERT_TRUE(s.ordinary(claim_of(100, {1, 2})).is_ok());
  s.ex.run();
  ASSERT_TRUE(s.provider->release(100).is_ok());
  ASSERT_TRUE(s.ordinary(claim_of(101, {4, 5})).is_ok());
  s.ex.run();
  ASSERT_TRUE(s.provider->release(101).is_ok());
}

TEST(ProviderOrdinary, TwoOrdinaryClaimsCannotDeadlockHoldingRoomTheOtherNeeds) {
  SimStack s(kFourSlots);
  fill_cache(s);
  const TimePoint t = s.ex.now();
  // Admitted alone, A would hold 1 and 2 and read 3 and 8; B would hold 5 and read 6. Holding
  // as they come, A and B filled the tier between them and waited for each other forever.
  ASSERT_EQ(*s.ordinary(claim_of(1, {1, 2, 3, 8})), ClaimPhase::kOrdinaryReading);
  ASSERT_EQ(*s.ordinary(claim_of(2, {5, 6})), ClaimPhase::kOrdinaryReading);
  EXPECT_EQ(s.provider->stats().ordinary_waiting, 1u);  // B holds nothing yet
  EXPECT_EQ(s.tier->find(obj(5))->holds, 0u);
  s.ex.run();
  ASSERT_EQ(s.ready.count(1), 1u) << "A never became ready";
  EXPECT_EQ(s.ready.at(1).first - t, 2 * kObjTime);
  EXPECT_TRUE(s.ready.at(1).second.is_ok());
  EXPECT_TRUE(s.provider->check_invariants().is_ok());
  EXPECT_EQ(s.ready.count(2), 0u);  // B waits for A's room, holding nothing
  ASSERT_TRUE(s.provider->release(1).is_ok());
  s.ex.run();
  ASSERT_EQ(s.ready.count(2), 1u) << "B never became ready";
  // 5 was evicted for 8, so B reads 5 and 6 one after the other.
  EXPECT_EQ(s.ready.at(2).first - t, 4 * kObjTime);
  EXPECT_EQ(s.provider->stats().ordinary_waiting, 0u);
  EXPECT_TRUE(s.provider->check_invariants().is_ok());
  ASSERT_TRUE(s.provider->release(2).is_ok());
  EXPECT_EQ(s.tier->stats().pinned_bytes, 0u);
}

TEST(ProviderOrdinary, AWaitingOrdinaryClaimCancelledHoldsNothingAndLeavesTheLine) {
  SimStack s(kFourSlots);
  fill_cache(s);
  ASSERT_TRUE(s.ordinary(claim_of(1, {1, 2, 3, 8})).is_ok());
  ASSERT_TRUE(s.ordinary(claim_of(2, {5, 6})).is_ok());
  ASSERT_TRUE(s.ordinary(claim_of(3, {7})).is_ok());  // behind B, though it would fit later
  EXPECT_EQ(s.provider->stats().ordinary_waiting, 2u);
  ASSERT_TRUE(s.provider->cancel(2).is_ok());
  EXPECT_EQ(s.provider->stats().ordinary_waiting, 1u);
  s.ex.run();
  ASSERT_TRUE(s.provider->release(1).is_ok());
  s.ex.run();
  EXPECT_FALSE(s.ready.count(2));
  ASSERT_EQ(s.ready.count(3), 1u);
  EXPECT_TRUE(s.provider->check_invariants().is_ok());
}

TEST(ProviderOrdinary, AnOrdinaryClaimLargerThanTheTierIsRefused) {
  SimStack s({.capacity_objects = 2, .budget_objects = 1});
  auto r = s.ordinary(claim_of(1, {1, 2, 3}));
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("more than the fast tier"), std::string::npos);
  EXPECT_EQ(s.provider->stats().claims, 0u);
}

TEST(ProviderOrdinary, ACommitDoesNotTakeRoomOwedToAdmittedDemandReads) {
  SimStack s({.capacity_objects = 5, .budget_objects = 4, .max_reads_in_flight = 1});
  // A's reads of 1..3 are owed three slots (one filling, two queued); two are left for a
  // commit, not three.
  ASSERT_TRUE(s.ordinary(claim_of(1, {1, 2, 3})).is_ok());
  EXPECT_EQ(s.commit(claim_of(2, {4, 5, 6})).status().code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(s.commit(claim_of(3, {4, 5})).is_ok());
  s.ex.run();
  EXPECT_TRUE(s.ready.at(1).second.is_ok());
  EXPECT_TRUE(s.ready.at(3).second.is_ok());
  EXPECT_TRUE(s.provider->check_invariants().is_ok());
}

}  // namespace
}  // namespace tempokv::testing
