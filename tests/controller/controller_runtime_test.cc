// Several runtimes sharing one controller (each with its own waiting order), the attempt order,
// and the lifecycle rules of DESIGN.md §3 that estimates and capacity must not bend.
#include <gtest/gtest.h>

#include <set>

#include "adapter/runtime_adapter.h"
#include "controller/controller_fixture.h"

namespace tempokv {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Fixture;
using testing::kObj;
using testing::manifest;
using testing::obj;
using testing::SimStackOptions;

std::vector<std::pair<ClaimId, Duration>> ttus(std::vector<ClaimId> ids, Duration ttu) {
  std::vector<std::pair<ClaimId, Duration>> out;
  for (ClaimId id : ids) out.emplace_back(id, ttu);
  return out;
}

TEST(ControllerRuntimes, QueueKCountsRankWithinEachRuntimesOwnQueue) {
  Fixture f("queue-1");
  for (ClaimId id : {1, 2, 3, 4}) {
    ASSERT_TRUE(f.controller->report(id, manifest({id}), seconds(10)).is_ok());
  }
  std::vector<ClaimId> zero{1, 2}, one{3, 4};
  ASSERT_TRUE(f.controller->update({}, zero, 0).is_ok());
  ASSERT_TRUE(f.controller->update({}, one, 1).is_ok());
  // Claim 3 is third overall but first in runtime 1's queue.
  EXPECT_EQ(f.info(1).state, ClaimState::kStaging);
  EXPECT_EQ(f.info(2).state, ClaimState::kPlanned);
  EXPECT_EQ(f.info(3).state, ClaimState::kStaging);
  EXPECT_EQ(f.info(4).state, ClaimState::kPlanned);
}

TEST(ControllerRuntimes, AnUpdateReplacesOnlyItsOwnRuntimesOrder) {
  Fixture f("queue-1");
  for (ClaimId id : {1, 2, 3, 4}) {
    ASSERT_TRUE(f.controller->report(id, manifest({id}), seconds(10)).is_ok());
  }
  std::vector<ClaimId> zero{1, 2}, one{3, 4}, one_next{4};
  ASSERT_TRUE(f.controller->update({}, zero, 0).is_ok());
  ASSERT_TRUE(f.controller->update({}, one, 1).is_ok());
  ASSERT_TRUE(f.controller->update({}, one_next, 1).is_ok());
  EXPECT_EQ(f.info(4).state, ClaimState::kStaging);
  // Runtime 0's order still ranks claim 2 second.
  EXPECT_EQ(f.info(2).state, ClaimState::kPlanned);
}

TEST(ControllerRuntimes, AttemptsInterleaveRuntimesByRank) {
  // Budget of two objects; all four claims become eligible at once. Attempt order: rank 0 of
  // runtimes 0 and 1 (claims 1, 3), then rank 1 (claims 2, 4): only 1 and 3 fit.
  Fixture f("tempokv", SimStackOptions{.budget_objects = 2});
  for (ClaimId id : {1, 2, 3, 4}) {
    ASSERT_TRUE(f.controller->report(id, manifest({id}), seconds(10)).is_ok());
  }
  std::vector<ClaimId> zero{1, 2}, one{3, 4};
  ASSERT_TRUE(f.controller->update({}, zero, 0).is_ok());
  ASSERT_TRUE(f.controller->update({}, one, 1).is_ok());
  auto now = ttus({1, 2, 3, 4}, Duration::zero());
  ASSERT_TRUE(f.controller->update_estimates(now).is_ok());
  // Claim 1 commits; the others would share the device with its read, so they wait for it
  // (wait_for_reads_ahead) and are attempted in the same order once it has drained.
  f.run_to(milliseconds(63));
  EXPECT_NE(f.info(1).state, ClaimState::kPlanned);
  EXPECT_EQ(f.since(f.info(3).timeline.committed), testing::kObjTime);
  EXPECT_TRUE(f.info(2).refused);
  EXPECT_TRUE(f.info(4).refused);
  EXPECT_EQ(f.controller->stats().refused_attempts, 2u);
}

TEST(ControllerRuntimes, ARefusedClaimDoesNotBlockTheClaimsBehindIt) {
  // Budget of three objects, two taken by claim 9. Claim 1 (two objects) is refused; claim 2
  // behind it (one object) commits in the same evaluation.
  Fixture f("tempokv", SimStackOptions{.budget_objects = 3});
  ASSERT_TRUE(f.controller->report(9, manifest({9, 10}), Duration::zero()).is_ok());
  ASSERT_EQ(f.info(9).state, ClaimState::kStaging);
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2}), seconds(10)).is_ok());
  ASSERT_TRUE(f.controller->report(2, manifest({3}), seconds(10)).is_ok());
  std::vector<ClaimId> order{1, 2};
  auto now = ttus({1, 2}, Duration::zero());
  ASSERT_TRUE(f.controller->update(now, order).is_ok());
  EXPECT_EQ(f.info(1).state, ClaimState::kPlanned);
  EXPECT_TRUE(f.info(1).refused);
  // Claim 2 fits; it waits for claim 9's reads (wait_for_reads_ahead), then commits.
  f.run_to(milliseconds(200));
  EXPECT_EQ(f.since(f.info(2).timeline.committed), 2 * testing::kObjTime);
  EXPECT_EQ(f.info(1).state, ClaimState::kPlanned);
}

TEST(ControllerRuntimes, TwoAdaptersKeepTheirQueuesApart) {
  testing::SimStack stack;
  Controller controller(stack.ex, *stack.provider, make_commit_policy("queue-1").value());
  const CostProfile profile = testing::steps_profile();
  std::vector<std::unique_ptr<RuntimeAdapter>> adapters;
  for (uint32_t rt : {0u, 1u}) {
    AdapterOptions o;
    o.max_active = 1;
    o.runtime_id = rt;
    adapters.push_back(RuntimeAdapter::create(controller, profile, o).value());
  }
  // Runtime 0 waits for requests 1, 2; runtime 1 for 3, 4 (ids are unique across runtimes).
  for (uint64_t id : {1, 2, 3, 4}) {
    RuntimeAdapter& a = *adapters[id <= 2 ? 0 : 1];
    ASSERT_TRUE(a.add_request({id, 1000, 256, kObj, 16}).is_ok());
    ASSERT_TRUE(a.report_hit(id, manifest({id})).is_ok());
  }
  std::vector<uint64_t> zero{1, 2}, one{3, 4};
  ASSERT_TRUE(adapters[0]->update_order(zero).is_ok());
  ASSERT_TRUE(adapters[1]->update_order(one).is_ok());
  EXPECT_EQ(controller.info(1).value().state, ClaimState::kStaging);
  EXPECT_EQ(controller.info(2).value().state, ClaimState::kPlanned);
  EXPECT_EQ(controller.info(3).value().state, ClaimState::kStaging);
  EXPECT_EQ(controller.info(4).value().state, ClaimState::kPlanned);
}

TEST(ControllerLifecycle, ACommittedClaimIsNotRevokedByALaterLongerTtu) {
  Fixture f("tempokv");
  // TTU 1 s, TTR 125 ms: commits at 875 ms.
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2}), seconds(1)).is_ok());
  f.run_to(milliseconds(900));
  ASSERT_EQ(f.info(1).state, ClaimState::kStaging);
  // The runtime now expects retrieval 10 s later: laxity would be positive, the commit stands.
  auto later = ttus({1}, seconds(10));
  std::vector<ClaimId> order{1};
  ASSERT_TRUE(f.controller->update(later, order).is_ok());
  EXPECT_EQ(f.info(1).state, ClaimState::kStaging);
  EXPECT_EQ(f.stack.tier->stats().reserved_bytes, 2 * kObj);
  f.run_to(seconds(2));
  EXPECT_EQ(f.info(1).state, ClaimState::kStageReady);
  EXPECT_EQ(f.info(1).timeline.ready, f.at(milliseconds(1000)));
}

TEST(ControllerLifecycle, AnOrdinaryClaimRecordsItsWholeTimeline) {
  Fixture f("demand", SimStackOptions{.budget_objects = 2});
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2}), Duration::zero()).is_ok());
  ASSERT_TRUE(f.controller->report(2, manifest({3}), Duration::zero()).is_ok());
  f.retrieve(1, milliseconds(100));  // takes the whole budget until 225 ms
  f.run_to(milliseconds(10));
  // Refused at 10 ms: ordinary; its demand read queues behind claim 1's pair (done at 125 ms).
  f.retrieve(2, milliseconds(50));
  f.stack.ex.run();
  ClaimInfo i = f.info(2);
  EXPECT_TRUE(i.ordinary);
  EXPECT_TRUE(i.refused);
  EXPECT_EQ(i.state, ClaimState::kReleased);
  EXPECT_FALSE(i.timeline.committed.has_value());
  EXPECT_EQ(f.since(i.timeline.retrieval_requested), milliseconds(10));
  EXPECT_EQ(f.since(i.timeline.ready), milliseconds(187) + std::chrono::microseconds(500));
  EXPECT_EQ(f.since(i.timeline.transfer_start), milliseconds(187) + std::chrono::microseconds(500));
  EXPECT_EQ(f.since(i.timeline.transfer_end), milliseconds(237) + std::chrono::microseconds(500));
  EXPECT_EQ(f.since(i.timeline.released), milliseconds(237) + std::chrono::microseconds(500));
}

TEST(ControllerLifecycle, RefusalsCountAsAttemptsAndAsDistinctClaims) {
  Fixture f("immediate", SimStackOptions{.budget_objects = 2});
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2}), seconds(1)).is_ok());
  // Claim 2 is refused at its report and again at each reevaluation while claim 1 holds the
  // budget; claim 3 once at its report.
  ASSERT_TRUE(f.controller->report(2, manifest({3}), seconds(1)).is_ok());
  ASSERT_TRUE(f.controller->report(3, manifest({4}), seconds(1)).is_ok());
  ControllerStats s = f.controller->stats();
  EXPECT_EQ(s.refused_claims, 2u);
  EXPECT_EQ(s.refused_attempts, 3u);  // 2 at its report, 2 and 3 at claim 3's
}

// A refusal short of the budget by two objects is not tried again (no commit asked of the
// provider) when one object's protection ends, only once two have been freed.
TEST(ControllerLifecycle, ARefusalShortOfTheBudgetStandsUntilThatManyBytesAreFreed) {
  Fixture f("immediate", SimStackOptions{.budget_objects = 3});
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2}), seconds(1)).is_ok());
  ASSERT_TRUE(f.controller->report(5, manifest({9}), seconds(1)).is_ok());  // the whole budget
  f.stack.ex.run();  // both stage-ready: a cancel ends their protection at once
  ASSERT_EQ(f.info(5).state, ClaimState::kStageReady);
  ASSERT_TRUE(f.controller->report(2, manifest({3, 4}), seconds(1)).is_ok());
  EXPECT_TRUE(f.info(2).refused);
  const uint64_t refusals = f.stack.provider->stats().refusals;
  ASSERT_TRUE(f.controller->cancel(5).is_ok());  // one object freed: still short by one
  EXPECT_EQ(f.info(2).state, ClaimState::kPlanned);
  EXPECT_EQ(f.stack.provider->stats().refusals, refusals);
  ASSERT_TRUE(f.controller->cancel(1).is_ok());  // two more: it fits
  EXPECT_NE(f.info(2).state, ClaimState::kPlanned);
  EXPECT_EQ(f.stack.provider->stats().refusals, refusals);
}

// Claim 1, larger than the budget (two objects), goes down the ordinary path at 1 s, and its copy
// holds (pins) all three objects of the three-object tier.
void pin_the_tier_with_an_ordinary_copy(Fixture& f) {
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2, 3}), seconds(1)).is_ok());
  f.retrieve(1, seconds(10));
  f.run_to(seconds(1));
  ASSERT_EQ(f.info(1).state, ClaimState::kOrdinary);
  ASSERT_EQ(f.stack.tier->stats().pinned_bytes, 3 * kObj);
}

// The capacity version: a claim refused for want of fast-tier room (objects pinned by an ordinary
// copy, not the budget) by two objects is not tried again when one object is unpinned, only once
// two have been. The old rule (any room freed) tried it at the first object and was refused.
TEST(ControllerLifecycle, ARefusalShortOfTheCapacityStandsUntilThatManyBytesAreFreed) {
  ControllerOptions co;
  co.progressive_release = true;  // each copied object's hold ends on its own
  Fixture f("immediate", SimStackOptions{.capacity_objects = 3, .budget_objects = 2}, co);
  ASSERT_NO_FATAL_FAILURE(pin_the_tier_with_an_ordinary_copy(f));
  // Fits the budget (2 objects), not the capacity: 3 pinned + 2 > 3, short by two objects.
  ASSERT_TRUE(f.controller->report(2, manifest({4, 5}), seconds(1)).is_ok());
  ASSERT_TRUE(f.info(2).refused);
  EXPECT_EQ(f.stack.provider->last_refusal_budget_shortfall(), 0u);
  EXPECT_EQ(f.stack.provider->last_refusal_capacity_shortfall(), 2 * kObj);
  const uint64_t refusals = f.stack.provider->stats().refusals;
  const uint64_t freed = f.stack.provider->capacity_freed_bytes();
  ASSERT_TRUE(f.controller->object_transferred(1, obj(1)).is_ok());  // one object unpinned
  EXPECT_EQ(f.stack.provider->capacity_freed_bytes() - freed, kObj);
  EXPECT_EQ(f.info(2).state, ClaimState::kPlanned);
  EXPECT_EQ(f.stack.provider->stats().refusals, refusals);  // not attempted
  ASSERT_TRUE(f.controller->object_transferred(1, obj(2)).is_ok());  // two: it fits
  EXPECT_EQ(f.info(2).state, ClaimState::kStaging);
  EXPECT_EQ(f.stack.provider->stats().refusals, refusals);
}

TEST(ControllerLifecycle, ARefusedClaimSetAsideUntilRoomIsFreedKeepsTheTtuItGotMeanwhile) {
  ControllerOptions co;
  co.progressive_release = true;  // each copied object's hold ends on its own
  Fixture f("tempokv", SimStackOptions{.capacity_objects = 3, .budget_objects = 2}, co);
  ASSERT_NO_FATAL_FAILURE(pin_the_tier_with_an_ordinary_copy(f));
  // Used now: eligible at once, refused for capacity (short by two objects) and set aside.
  ASSERT_TRUE(f.controller->report(2, manifest({4, 5}), Duration::zero()).is_ok());
  ASSERT_TRUE(f.info(2).refused);
  // The next pass finds its refusal standing and sets it aside.
  ASSERT_TRUE(f.controller->update_estimates({}).is_ok());
  const uint64_t refusals = f.stack.provider->stats().refusals;
  const uint64_t queries = f.controller->stats().ttr_queries;
  // A new TTU while it waits: used 5 s from now.
  std::pair<ClaimId, Duration> later{2, seconds(5)};
  ASSERT_TRUE(f.controller->update_estimates({&later, 1}).is_ok());
  ASSERT_TRUE(f.controller->object_transferred(1, obj(1)).is_ok());  // one object: not enough
  f.run_to(seconds(2));  // ticks and evaluations in between look at nothing
  EXPECT_EQ(f.controller->stats().ttr_queries, queries);
  ASSERT_TRUE(f.controller->object_transferred(1, obj(2)).is_ok());  // two: it would fit
  EXPECT_EQ(f.stack.provider->stats().refusals, refusals);
  // Back in the index with the new TTU: not eligible before its laxity reaches zero, 6 s less
  // its TTR (two fresh reads sharing 1 GiB/s: 125 ms).
  EXPECT_EQ(f.info(2).state, ClaimState::kPlanned);
  f.run_to(seconds(7));
  EXPECT_EQ(f.since(f.info(2).timeline.committed), milliseconds(5875));
  EXPECT_EQ(f.stack.provider->stats().refusals, refusals);
}

TEST(ClaimState, EveryTransitionOutsideTheDesignTableIsIllegal) {
  using S = ClaimState;
  const S all[] = {S::kPlanned, S::kStaging, S::kStageReady, S::kTransferring, S::kOrdinary,
                   S::kReleased};
  const std::set<std::pair<S, S>> allowed = {
      {S::kPlanned, S::kStaging},      {S::kPlanned, S::kStageReady},
      {S::kPlanned, S::kOrdinary},     {S::kPlanned, S::kReleased},
      {S::kStaging, S::kStageReady},   {S::kStaging, S::kReleased},
      {S::kStageReady, S::kTransferring}, {S::kStageReady, S::kReleased},
      {S::kTransferring, S::kReleased}, {S::kOrdinary, S::kReleased}};
  for (S from : all) {
    for (S to : all) {
      EXPECT_EQ(transition_allowed(from, to), allowed.count({from, to}) == 1)
          << claim_state_name(from) << " -> " << claim_state_name(to);
    }
  }
}

}  // namespace
}  // namespace tempokv
