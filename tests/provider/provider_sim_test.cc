// Staging provider in simulated mode: exact virtual times from the simulated SSD engine
// (1 GiB/s shared by processor sharing, zero latency; 64 MiB objects take 62.5 ms alone).
#include <gtest/gtest.h>

#include "provider/sim_fixture.h"

namespace tempokv::testing {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

TEST(ProviderSim, TtrOfAClaimBehindAQueueOfKnownWorkIsTheFinishOfItsLastRead) {
  SimStack s;  // 2 reads at once
  ASSERT_TRUE(s.commit(claim_of(1, {1, 2, 3, 4})).is_ok());
  // Ahead: reads 1,2 share the device until 125 ms, then 3,4 until 250 ms; the claim's two new
  // reads follow and finish together at 375 ms. A sum of isolated reads would say 125 ms.
  StagingClaim b = claim_of(2, {5, 6});
  EXPECT_EQ(s.provider->ttr(b), milliseconds(375));
  EXPECT_EQ(s.provider->static_ttr(b), milliseconds(125));
  ASSERT_EQ(*s.commit(b), CommitState::kStaging);
  s.ex.run();
  EXPECT_EQ(s.ready_after(1), milliseconds(250));
  EXPECT_EQ(s.ready_after(2), milliseconds(375));
}

TEST(ProviderSim, TtrFollowsProgressOfReadsInFlight) {
  SimStack s;
  ASSERT_TRUE(s.commit(claim_of(1, {1, 2, 3})).is_ok());
  StagingClaim b = claim_of(2, {9});
  // 1,2 until 125 ms; then 3 and 9 share until 250 ms.
  EXPECT_EQ(s.provider->ttr(b), milliseconds(250));
  s.ex.run_for(milliseconds(100));
  EXPECT_EQ(s.provider->ttr(b), milliseconds(150));
}

TEST(ProviderSim, ClaimCoveredByStagingInFlightAddsNoReadsButHasNonzeroTtr) {
  SimStack s;
  ASSERT_TRUE(s.commit(claim_of(1, {1, 2})).is_ok());
  StagingClaim c = claim_of(2, {2});
  EXPECT_EQ(s.provider->ttr(c), milliseconds(125));
  s.ex.run_for(milliseconds(25));
  EXPECT_EQ(s.provider->ttr(c), milliseconds(100));
  uint64_t issued = s.provider->stats().reads_issued;
  ASSERT_EQ(*s.commit(c), CommitState::kStaging);
  EXPECT_EQ(s.provider->stats().reads_issued, issued);
  EXPECT_EQ(s.provider->stats().coalesced, 1u);
  s.ex.run();
  EXPECT_EQ(s.ready_after(2), milliseconds(125));
  EXPECT_EQ(s.engine_reads(), 2u);
}

TEST(ProviderSim, TtrIsZeroWhenEveryObjectIsResident) {
  SimStack s;
  ASSERT_TRUE(s.commit(claim_of(1, {1, 2})).is_ok());
  s.ex.run();
  ASSERT_TRUE(s.provider->release(1).is_ok());
  StagingClaim again = claim_of(2, {2, 1});
  EXPECT_EQ(s.provider->ttr(again), Duration::zero());
  EXPECT_EQ(s.provider->static_ttr(again), Duration::zero());
  EXPECT_EQ(*s.commit(again), CommitState::kStageReady);
  EXPECT_EQ(s.provider->phase(2), ClaimPhase::kStageReady);
  EXPECT_EQ(s.tier->stats().protected_bytes, 2 * kObj);
}

TEST(ProviderSim, TwoClaimsSharingObjectsCauseOneReadAndOneReservation) {
  SimStack s;
  ASSERT_TRUE(s.commit(claim_of(1, {1, 2})).is_ok());
  ASSERT_TRUE(s.commit(claim_of(2, {2, 3})).is_ok());
  EXPECT_EQ(s.tier->stats().reserved_bytes, 3 * kObj);
  s.ex.run();
  EXPECT_EQ(s.engine_reads(), 3u);
  EXPECT_EQ(s.provider->stats().reads_issued, 3u);
  EXPECT_EQ(s.tier->stats().protected_bytes, 3 * kObj);
  EXPECT_EQ(s.tier->find(obj(2))->protect_count, 2u);
  // Releasing one claim keeps the shared object protected for the other.
  ASSERT_TRUE(s.provider->release(1).is_ok());
  EXPECT_EQ(s.tier->find(obj(2))->protect_count, 1u);
  EXPECT_EQ(s.tier->stats().protected_bytes, 2 * kObj);
  EXPECT_TRUE(s.provider->check_invariants().is_ok());
}

TEST(ProviderSim, BudgetRefusalLeavesTheClaimUncommittedAndCostsNothing) {
  SimStack s({.budget_objects = 4});
  ASSERT_TRUE(s.commit(claim_of(1, {1, 2, 3})).is_ok());
  FastTierStats before = s.tier->stats();
  ProviderStats pbefore = s.provider->stats();
  auto r = s.commit(claim_of(2, {3, 4, 5}));  // 3 is shared: needs 2 more objects, 1 fits
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("needs 134217728 bytes"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("67108864 bytes available"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(s.provider->phase(2), std::nullopt);
  FastTierStats after = s.tier->stats();
  EXPECT_EQ(after.reserved_bytes, before.reserved_bytes);
  EXPECT_EQ(after.protected_bytes, before.protected_bytes);
  EXPECT_EQ(s.provider->stats().queued_reads, pbefore.queued_reads);
  EXPECT_EQ(s.provider->stats().refusals, 1u);
  s.ex.run();
  EXPECT_EQ(s.engine_reads(), 3u);
  EXPECT_EQ(s.ready.count(2), 0u);
}

TEST(ProviderSim, CancelDuringStagingKeepsProtectionUntilTheReadCompletes) {
  SimStack s;
  ASSERT_TRUE(s.commit(claim_of(1, {1})).is_ok());
  s.ex.run_for(milliseconds(10));
  ASSERT_TRUE(s.provider->cancel(1).is_ok());
  EXPECT_EQ(s.provider->phase(1), ClaimPhase::kDraining);
  EXPECT_EQ(s.tier->stats().reserved_bytes, kObj);
  s.ex.run_until(s.t0 + kObjTime - Duration(1));
  EXPECT_EQ(s.tier->stats().reserved_bytes, kObj);
  s.ex.run();
  EXPECT_EQ(s.since_t0(), kObjTime);
  EXPECT_EQ(s.provider->phase(1), std::nullopt);
  EXPECT_EQ(s.tier->stats().reserved_bytes, 0u);
  EXPECT_EQ(s.tier->stats().protected_bytes, 0u);
  EXPECT_TRUE(s.tier->resident(obj(1)));  // kept as ordinary cache
  EXPECT_EQ(s.ready.count(1), 0u);        // a cancelled claim is not reported
  EXPECT_TRUE(s.provider->check_invariants().is_ok());
}

TEST(ProviderSim, CancelBeforeIssueDropsQueuedReadsAtOnce) {
  SimStack s({.max_reads_in_flight = 1});
  ASSERT_TRUE(s.commit(claim_of(1, {1, 2, 3})).is_ok());
  ASSERT_TRUE(s.provider->cancel(1).is_ok());
  EXPECT_EQ(s.provider->stats().queued_reads, 0u);
  EXPECT_EQ(s.tier->stats().reserved_bytes, kObj);  // only the read in flight still counts
  s.ex.run();
  EXPECT_EQ(s.engine_reads(), 1u);
  EXPECT_EQ(s.tier->stats().reserved_bytes, 0u);
}

TEST(ProviderSim, ReleaseDuringATransferWaitsForItsEnd) {
  SimStack s;
  ASSERT_TRUE(s.commit(claim_of(1, {1})).is_ok());
  s.ex.run();
  ASSERT_TRUE(s.provider->begin_transfer(1).is_ok());
  ASSERT_TRUE(s.provider->cancel(1).is_ok());
  EXPECT_EQ(s.tier->stats().protected_bytes, kObj);
  ASSERT_TRUE(s.provider->end_transfer(1).is_ok());
  EXPECT_EQ(s.tier->stats().protected_bytes, 0u);
  EXPECT_EQ(s.provider->phase(1), std::nullopt);
}

TEST(ProviderSim, ReleaseWhileStagingIsRefused) {
  SimStack s;
  ASSERT_TRUE(s.commit(claim_of(1, {1})).is_ok());
  EXPECT_EQ(s.provider->release(1).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.provider->begin_transfer(1).code(), StatusCode::kFailedPrecondition);
}

TEST(ProviderSim, EvictionNeverTouchesAProtectedObject) {
  SimStack s({.capacity_objects = 4, .budget_objects = 2});
  ASSERT_TRUE(s.commit(claim_of(1, {1})).is_ok());
  s.ex.run();
  // Demand traffic through a tier of 4 slots, one of them protected.
  for (ClaimId id = 2; id <= 12; ++id) {
    ASSERT_TRUE(s.ordinary(claim_of(id, {id, id + 20})).is_ok());
    s.ex.run();
    ASSERT_TRUE(s.provider->release(id).is_ok());
  }
  EXPECT_GT(s.tier->stats().evictions, 10u);
  EXPECT_TRUE(s.tier->resident(obj(1)));
  EXPECT_EQ(s.tier->find(obj(1))->protect_count, 1u);
  EXPECT_TRUE(s.provider->check_invariants().is_ok());
}

TEST(ProviderSim, OrdinaryPathWorksWhenTheBudgetIsExhausted) {
  SimStack s({.capacity_objects = 8, .budget_objects = 2});
  ASSERT_TRUE(s.commit(claim_of(1, {1, 2})).is_ok());
  EXPECT_EQ(s.commit(claim_of(2, {3})).status().code(), StatusCode::kResourceExhausted);
  s.ex.run();
  ASSERT_TRUE(s.provider->release(1).is_ok());
  // 1 is resident: used in place; 3 and 4 are read on demand.
  ASSERT_EQ(*s.ordinary(claim_of(3, {1, 3, 4})), ClaimPhase::kOrdinaryReading);
  TimePoint start = s.ex.now();
  s.ex.run();
  EXPECT_EQ(s.ready.at(3).first - start, 2 * kObjTime);
  EXPECT_TRUE(s.ready.at(3).second.is_ok());
  EXPECT_EQ(s.tier->stats().protected_bytes + s.tier->stats().reserved_bytes, 0u);
  EXPECT_EQ(s.tier->find(obj(1))->holds, 1u);
  EXPECT_EQ(s.provider->stats().demand_reads, 2u);
  ASSERT_TRUE(s.provider->release(3).is_ok());
  EXPECT_EQ(s.tier->stats().pinned_bytes, 0u);
  EXPECT_EQ(s.tier->stats().hits, 1u);
}

TEST(ProviderSim, ReadErrorFailsEveryClaimSharingTheObject) {
  SimStack s;
  ASSERT_TRUE(s.commit(claim_of(1, {1})).is_ok());  // read 1 goes first and succeeds
  s.faults->fail_nth_read(1);                       // the next read (object 2) fails
  ASSERT_TRUE(s.commit(claim_of(2, {2, 3})).is_ok());
  ASSERT_TRUE(s.commit(claim_of(3, {2})).is_ok());
  s.ex.run();
  ASSERT_TRUE(s.ready.at(1).second.is_ok());
  EXPECT_EQ(s.ready.at(2).second.code(), StatusCode::kIOError);
  EXPECT_EQ(s.ready.at(3).second.code(), StatusCode::kIOError);
  EXPECT_EQ(s.provider->phase(2), std::nullopt);
  EXPECT_EQ(s.provider->phase(3), std::nullopt);
  EXPECT_EQ(s.provider->stats().failed, 2u);
  EXPECT_EQ(s.tier->stats().protected_bytes, kObj);  // claim 1 only
  EXPECT_EQ(s.tier->stats().reserved_bytes, 0u);
  EXPECT_FALSE(s.tier->resident(obj(2)));
  EXPECT_TRUE(s.provider->check_invariants().is_ok());
  // A later commit reads the object afresh.
  ASSERT_TRUE(s.commit(claim_of(4, {2})).is_ok());
  s.ex.run();
  EXPECT_TRUE(s.ready.at(4).second.is_ok());
}

TEST(ProviderSim, ARefusalWithoutItsTextHasTheSameCodeAndShortfallsAndChangesNothing) {
  SimStack s({.budget_objects = 4});
  ASSERT_TRUE(s.commit(claim_of(1, {1, 2, 3})).is_ok());
  auto full = s.provider->commit(claim_of(2, {3, 4, 5}), [](ClaimId, Status) {});
  ASSERT_EQ(full.status().code(), StatusCode::kResourceExhausted);
  const uint64_t budget_short = s.provider->last_refusal_budget_shortfall();
  EXPECT_EQ(budget_short, kObj);  // needs two more objects, one fits
  auto bare = s.provider->commit(
      claim_of(2, {3, 4, 5}), [](ClaimId, Status) {}, nullptr,
      StagingProvider::RefusalText::kCodeOnly);
  ASSERT_EQ(bare.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(bare.status().message(), "refused");
  EXPECT_EQ(s.provider->last_refusal_budget_shortfall(), budget_short);
  EXPECT_EQ(s.provider->last_refusal_capacity_shortfall(), 0u);
  EXPECT_EQ(s.provider->stats().refusals, 2u);
  EXPECT_EQ(s.provider->phase(2), std::nullopt);
  // A key twice in the manifest counts once, as before.
  auto twice = s.provider->commit(
      claim_of(3, {4, 4}), [](ClaimId, Status) {}, nullptr,
      StagingProvider::RefusalText::kCodeOnly);
  ASSERT_TRUE(twice.is_ok()) << twice.status().to_string();
  EXPECT_EQ(s.tier->stats().reserved_bytes, 4 * kObj);
}

TEST(ProviderSim, CommitOfAnObjectMissingFromTheStoreIsRefused) {
  SimStack s({.stored_objects = 2});
  auto r = s.commit(claim_of(1, {1, 3}));
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.provider->phase(1), std::nullopt);
  EXPECT_EQ(s.tier->stats().reserved_bytes, 0u);
  auto wrong_size = s.commit(claim_of(2, {1}, kObj / 2));
  EXPECT_EQ(wrong_size.status().code(), StatusCode::kFailedPrecondition);
}

TEST(ProviderSim, ReadsCompletingTogetherFallIntoOneRateSample) {
  // Two reads in flight share 1 GiB/s and finish together at 125 ms. Closing the sample at the
  // first completion alone measured 64 MiB / 125 ms = 0.5 GiB/s.
  SimStack s({.calibration_weight = 1.0});
  ASSERT_TRUE(s.commit(claim_of(1, {1, 2})).is_ok());
  s.ex.run();
  EXPECT_DOUBLE_EQ(s.provider->stats().read_bytes_per_s, kRate);
  EXPECT_EQ(s.provider->stats().rate_samples, 1u);
}

TEST(ProviderSim, RateIsCalibratedOverBusyTimeOnly) {
  // 1 ms latency: one read alone is busy for 63.5 ms; the idle second between the two reads
  // must not dilute the rate.
  SimStack s({.latency = milliseconds(1), .calibration_weight = 1.0});
  ASSERT_TRUE(s.commit(claim_of(1, {1})).is_ok());
  s.ex.run();
  double expected = static_cast<double>(kObj) / 0.0635;
  EXPECT_DOUBLE_EQ(s.provider->stats().read_bytes_per_s, expected);
  s.ex.run_for(std::chrono::seconds(1));
  ASSERT_TRUE(s.commit(claim_of(2, {2})).is_ok());
  s.ex.run();
  EXPECT_DOUBLE_EQ(s.provider->stats().read_bytes_per_s, expected);
  EXPECT_EQ(s.provider->stats().rate_samples, 2u);
  // The projection now uses the calibrated rate: one 64 MiB read takes 63.5 ms.
  EXPECT_EQ(s.provider->ttr(claim_of(3, {3})), microseconds(63'500));
}

// Seed 2's claims 7 and 8 (docs/evaluation.md): a large claim used later, committed first, must
// not push a small claim used sooner past its use time. Reads go in use order, and the TTR of
// each claim, projected at its commit, is exactly when it becomes ready.
TEST(ProviderSim, ReadsFollowUseTimeSoALargerClaimUsedLaterCannotDelayAnEarlierOne) {
  SimStack s({.max_reads_in_flight = 1});
  StagingClaim late = claim_of(7, {1, 2, 3, 4, 5, 6});
  late.use_at = s.t0 + milliseconds(800);
  StagingClaim early = claim_of(8, {9, 10});
  early.use_at = s.t0 + milliseconds(200);
  EXPECT_EQ(s.provider->ttr(late), 6 * kObjTime);
  ASSERT_TRUE(s.commit(late).is_ok());
  // In commit order claim 8 would wait for all of claim 7: 8 × 62.5 ms = 500 ms, past its use.
  // In use order it waits only for the read already in flight: 3 × 62.5 ms.
  EXPECT_EQ(s.provider->ttr(early), 3 * kObjTime);
  ASSERT_TRUE(s.commit(early).is_ok());
  s.ex.run();
  EXPECT_EQ(s.ready_after(8), 3 * kObjTime);
  EXPECT_LE(s.t0 + s.ready_after(8), *early.use_at);
  EXPECT_EQ(s.ready_after(7), 8 * kObjTime);
  EXPECT_LE(s.t0 + s.ready_after(7), *late.use_at);
}

// The same two claims in commit order (IssueOrder::kCommit): claim 8, committed after claim 7,
// queues behind all of it, so its TTR at commit counts claim 7's reads and claim 7's TTR at its
// commit stands (in use order claim 8 cuts in and claim 7 is ready 125 ms later than projected).
// Its retrieval coming early moves nothing either.
TEST(ProviderSim, InCommitOrderALaterCommitForAnEarlierUseNeverDelaysACommittedClaim) {
  SimStack s({.max_reads_in_flight = 1, .issue_order = IssueOrder::kCommit});
  StagingClaim late = claim_of(7, {1, 2, 3, 4, 5, 6});
  late.use_at = s.t0 + milliseconds(800);
  StagingClaim early = claim_of(8, {9, 10});
  early.use_at = s.t0 + milliseconds(200);
  const Duration late_ttr = s.provider->ttr(late);
  EXPECT_EQ(late_ttr, 6 * kObjTime);
  ASSERT_TRUE(s.commit(late).is_ok());
  const Duration early_ttr = s.provider->ttr(early);
  EXPECT_EQ(early_ttr, 8 * kObjTime);
  ASSERT_TRUE(s.commit(early).is_ok());
  ASSERT_TRUE(s.provider->expedite(8, s.t0).is_ok());
  EXPECT_EQ(s.provider->ttr(early), 8 * kObjTime);
  s.ex.run();
  EXPECT_EQ(s.ready_after(7), late_ttr);
  EXPECT_EQ(s.ready_after(8), early_ttr);
  EXPECT_TRUE(s.provider->check_invariants().is_ok());
}

TEST(ProviderSim, ExpediteMovesACommittedClaimsQueuedReadsUp) {
  SimStack s({.max_reads_in_flight = 1});
  StagingClaim a = claim_of(1, {1, 2, 3});
  a.use_at = s.t0 + milliseconds(100);
  StagingClaim b = claim_of(2, {4, 5});
  b.use_at = s.t0 + milliseconds(900);
  ASSERT_TRUE(s.commit(a).is_ok());
  ASSERT_TRUE(s.commit(b).is_ok());
  // Claim 2's retrieval comes now: its reads go right after the one in flight.
  ASSERT_TRUE(s.provider->expedite(2, s.t0).is_ok());
  EXPECT_EQ(s.provider->ttr(b), 3 * kObjTime);
  s.ex.run();
  EXPECT_EQ(s.ready_after(2), 3 * kObjTime);
  EXPECT_EQ(s.ready_after(1), 5 * kObjTime);
  EXPECT_TRUE(s.provider->check_invariants().is_ok());
  EXPECT_EQ(s.provider->expedite(99, s.t0).code(), StatusCode::kNotFound);
}

TEST(ProviderSim, ReadsAreIssuedInCommitOrderThenManifestOrder) {
  SimStack s({.max_reads_in_flight = 1});
  ASSERT_TRUE(s.commit(claim_of(1, {3, 1})).is_ok());
  ASSERT_TRUE(s.commit(claim_of(2, {2})).is_ok());
  s.ex.run_until(s.t0 + kObjTime);
  EXPECT_TRUE(s.tier->resident(obj(3)));
  EXPECT_FALSE(s.tier->resident(obj(1)));
  s.ex.run_until(s.t0 + 2 * kObjTime);
  EXPECT_TRUE(s.tier->resident(obj(1)));
  EXPECT_FALSE(s.tier->resident(obj(2)));
  s.ex.run();
  EXPECT_EQ(s.ready_after(2), 3 * kObjTime);
}

TEST(ProviderSim, DemandReadWaitsWhileTheTierIsOccupiedThenEvicts) {
  SimStack s({.capacity_objects = 4, .budget_objects = 2});
  ASSERT_TRUE(s.ordinary(claim_of(1, {1, 2})).is_ok());  // holds two slots once read
  ASSERT_TRUE(s.commit(claim_of(2, {3, 4})).is_ok());    // reserves the other two
  ASSERT_TRUE(s.ordinary(claim_of(3, {5})).is_ok());     // no room left outside the budget
  s.ex.run();
  EXPECT_EQ(s.ready_after(1), 2 * kObjTime);
  EXPECT_EQ(s.ready_after(2), 4 * kObjTime);
  EXPECT_EQ(s.provider->phase(3), ClaimPhase::kOrdinaryReading);
  // Not admitted (provider_ordinary_test.cc): it holds nothing and queued no read yet.
  EXPECT_EQ(s.provider->stats().ordinary_waiting, 1u);
  EXPECT_EQ(s.provider->stats().queued_reads, 0u);
  ASSERT_TRUE(s.provider->release(1).is_ok());  // 1 and 2 become evictable cache
  s.ex.run();
  EXPECT_EQ(s.ready_after(3), 5 * kObjTime);
  EXPECT_EQ(s.tier->stats().evictions, 1u);
  EXPECT_TRUE(s.tier->resident(obj(3)));
  EXPECT_TRUE(s.tier->resident(obj(4)));
  EXPECT_TRUE(s.provider->check_invariants().is_ok());
}

TEST(ProviderSim, OptionsValidationNamesTheField) {
  ProviderOptions o;
  o.max_reads_in_flight = 0;
  EXPECT_NE(o.validate().message().find("max_reads_in_flight"), std::string::npos);
  o = ProviderOptions{};
  o.calibration_weight = 2;
  EXPECT_NE(o.validate().message().find("calibration_weight"), std::string::npos);
  o = ProviderOptions{};
  o.prior_read_bytes_per_s = 0;
  EXPECT_NE(o.validate().message().find("prior_read_bytes_per_s"), std::string::npos);
}

}  // namespace
}  // namespace tempokv::testing
