// A refused claim's refusal stands while the bound of its share of a commit's cost exceeds the room
// (Controller::refusal_stands): room freed and taken again does not bring it back. Once the room
// fits the bound, the provider's check alone measures its share before it goes back into the walk
// (Controller::refused_again): refused again without a commit attempt while its share does not
// fit, committed once it does; and once an object has left the store no refusal stands, so it is
// attempted as before (the store check ends it).
#include <gtest/gtest.h>

#include "controller/controller_fixture.h"

namespace tempokv {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::claim_of;
using testing::Fixture;
using testing::kObj;
using testing::manifest;
using testing::obj;
using testing::SimStackOptions;

// A budget of two objects held by a provider claim outside the controller ({1, 2}, stage-ready
// by 1 s), and claim 2 ({3, 4}, used now) refused for it and set aside.
void hold_the_budget_and_refuse_claim_2(Fixture& f) {
  ASSERT_TRUE(f.stack.provider->commit(claim_of(100, {1, 2}), {}).is_ok());
  f.run_to(seconds(1));
  ASSERT_EQ(f.stack.provider->phase(100), ClaimPhase::kStageReady);
  ASSERT_TRUE(f.controller->report(2, manifest({3, 4}), Duration::zero()).is_ok());
  ASSERT_TRUE(f.info(2).refused);
  EXPECT_EQ(f.stack.provider->last_refusal_budget_shortfall(), 2 * kObj);
  ASSERT_TRUE(f.controller->update_estimates({}).is_ok());  // its refusal stands: set aside
  // The two objects are freed, and taken again at once by another claim (reads queued).
  ASSERT_TRUE(f.stack.provider->release(100).is_ok());
  ASSERT_TRUE(f.stack.provider->commit(claim_of(101, {5, 6}), {}).is_ok());
}

// At 1.5 s claim 101 (stage-ready) is released; the room it frees lets claim 2, still planned,
// commit then, without any further refused commit.
void release_101_and_commit_2(Fixture& f, uint64_t commits_refused) {
  f.run_to(milliseconds(1500));
  EXPECT_EQ(f.info(2).state, ClaimState::kPlanned);
  ASSERT_EQ(f.stack.provider->phase(101), ClaimPhase::kStageReady);
  ASSERT_TRUE(f.stack.provider->release(101).is_ok());
  ASSERT_TRUE(f.controller->update_estimates({}).is_ok());
  EXPECT_EQ(f.info(2).state, ClaimState::kStaging);
  EXPECT_EQ(f.since(f.info(2).timeline.committed), milliseconds(1500));
  EXPECT_EQ(f.stack.provider->stats().refusals, commits_refused);
}

TEST(ControllerRefusal, AClaimWhoseFreedRoomWasTakenAgainIsNotLookedAtAgain) {
  Fixture f("tempokv", SimStackOptions{.capacity_objects = 16, .budget_objects = 2});
  ASSERT_NO_FATAL_FAILURE(hold_the_budget_and_refuse_claim_2(f));
  const uint64_t commits_refused = f.stack.provider->stats().refusals;
  const ControllerStats before = f.controller->stats();
  ASSERT_TRUE(f.controller->update_estimates({}).is_ok());
  EXPECT_EQ(f.info(2).state, ClaimState::kPlanned);
  // Its share (two objects) is beyond the room (none): no commit reached the provider, the
  // provider's check was not asked either, no TTR was projected.
  EXPECT_EQ(f.stack.provider->stats().refusals, commits_refused);
  EXPECT_EQ(f.controller->stats().refused_attempts, before.refused_attempts);
  EXPECT_EQ(f.controller->stats().ttr_queries, before.ttr_queries);
  EXPECT_TRUE(f.controller->check_refusal_bounds().is_ok());
  // Claim 101 is stage-ready by 1.125 s; its release frees the room and claim 2 commits then.
  release_101_and_commit_2(f, commits_refused);
}

// Its share grew since its refusal: one of its objects was protected by another claim then (so
// it cost one object) and is not now (two). The room freed fits the bound (one object) but not its
// share: the provider's check refuses it without a commit.
TEST(ControllerRefusal, AClaimWhoseShareGrewSinceItsRefusalIsRefusedWithoutACommitAttempt) {
  Fixture f("tempokv", SimStackOptions{.capacity_objects = 16, .budget_objects = 3});
  ASSERT_TRUE(f.stack.provider->commit(claim_of(100, {1, 2, 3}), {}).is_ok());
  f.run_to(seconds(1));
  ASSERT_EQ(f.stack.provider->phase(100), ClaimPhase::kStageReady);
  ASSERT_TRUE(f.controller->report(2, manifest({3, 4}), Duration::zero()).is_ok());
  ASSERT_TRUE(f.info(2).refused);
  EXPECT_EQ(f.stack.provider->last_own_cost().budget_bytes, kObj);  // object 4 only
  ASSERT_TRUE(f.controller->update_estimates({}).is_ok());  // its refusal stands: set aside
  // Three objects freed (object 3 stays resident, unprotected), two taken again: one left.
  ASSERT_TRUE(f.stack.provider->release(100).is_ok());
  ASSERT_TRUE(f.stack.provider->commit(claim_of(101, {5, 6}), {}).is_ok());
  const uint64_t commits_refused = f.stack.provider->stats().refusals;
  const ControllerStats before = f.controller->stats();
  ASSERT_TRUE(f.controller->update_estimates({}).is_ok());
  EXPECT_EQ(f.info(2).state, ClaimState::kPlanned);
  EXPECT_EQ(f.stack.provider->last_own_cost().budget_bytes, 2 * kObj);  // objects 3 and 4
  EXPECT_EQ(f.stack.provider->stats().refusals, commits_refused);
  EXPECT_EQ(f.controller->stats().refused_attempts, before.refused_attempts + 1);
  EXPECT_EQ(f.controller->stats().ttr_queries, before.ttr_queries);
  EXPECT_TRUE(f.controller->check_refusal_bounds().is_ok());
  // Another evaluation with nothing freed does not check it again (its share is the bound now).
  ASSERT_TRUE(f.controller->update_estimates({}).is_ok());
  EXPECT_EQ(f.controller->stats().refused_attempts, before.refused_attempts + 1);
  // Claim 101's release frees two more: its share fits, and it commits then.
  release_101_and_commit_2(f, commits_refused);
}

// A claim listed under an object that another claim then protects: its bound falls by that
// object, as its share does, and stays a lower bound.
TEST(ControllerRefusal, AnEntryOfOneOfItsObjectsLowersTheBoundOfItsShare) {
  Fixture f("tempokv", SimStackOptions{.capacity_objects = 16, .budget_objects = 2});
  ASSERT_NO_FATAL_FAILURE(hold_the_budget_and_refuse_claim_2(f));  // claims 101 {5, 6}, 2 {3, 4}
  // Claim 101 done and released; claim 102 takes object 3 (of claim 2's) and object 7.
  f.run_to(milliseconds(1500));
  ASSERT_EQ(f.stack.provider->phase(101), ClaimPhase::kStageReady);
  ASSERT_TRUE(f.stack.provider->release(101).is_ok());
  ASSERT_TRUE(f.stack.provider->commit(claim_of(102, {3, 7}), {}).is_ok());
  EXPECT_TRUE(f.controller->check_refusal_bounds().is_ok());
  // Its share is one object (4) now, beyond the room (none): still set aside, not checked.
  const ControllerStats before = f.controller->stats();
  ASSERT_TRUE(f.controller->update_estimates({}).is_ok());
  EXPECT_EQ(f.info(2).state, ClaimState::kPlanned);
  EXPECT_EQ(f.controller->stats().refused_attempts, before.refused_attempts);
  // Claim 102 released once ready: the room (two objects) fits its share, and it commits.
  f.run_to(seconds(3));
  ASSERT_EQ(f.stack.provider->phase(102), ClaimPhase::kStageReady);
  ASSERT_TRUE(f.stack.provider->release(102).is_ok());
  ASSERT_TRUE(f.controller->update_estimates({}).is_ok());
  EXPECT_NE(f.info(2).state, ClaimState::kPlanned);
  EXPECT_TRUE(f.info(2).timeline.committed.has_value());
}

// Three refused claims of two objects each fit the room a release frees (two objects); the first
// in attempt order commits and takes it, and the two behind it (not looked at in that pass) stay
// set aside until the next room: the second commits when the first is released, the third when
// the second is, as the full scan decides.
TEST(ControllerRefusal, ClaimsThatFitBehindACommitWaitForTheNextRoom) {
  for (bool full_scan : {false, true}) {
    SCOPED_TRACE(full_scan ? "full scan" : "index");
    ControllerOptions co;
    co.full_scan = full_scan;
    Fixture f("tempokv", SimStackOptions{.capacity_objects = 16, .budget_objects = 2}, co);
    ASSERT_TRUE(f.stack.provider->commit(claim_of(100, {1, 2}), {}).is_ok());
    f.run_to(seconds(1));
    for (ClaimId id : {2, 3, 4}) {
      const std::vector<uint64_t> objects{2 * id - 1, 2 * id};
      ASSERT_TRUE(f.controller->report(id, manifest(objects), Duration::zero()).is_ok());
      ASSERT_TRUE(f.info(id).refused);
    }
    ASSERT_TRUE(f.controller->update_estimates({}).is_ok());
    ASSERT_TRUE(f.stack.provider->release(100).is_ok());
    ASSERT_TRUE(f.controller->update_estimates({}).is_ok());
    EXPECT_EQ(f.info(2).state, ClaimState::kStaging);
    EXPECT_EQ(f.info(3).state, ClaimState::kPlanned);
    EXPECT_EQ(f.info(4).state, ClaimState::kPlanned);
    EXPECT_TRUE(f.controller->check_refusal_bounds().is_ok());
    f.run_to(milliseconds(1500));  // claim 2 stage-ready (two reads: 125 ms)
    f.retrieve(2, milliseconds(10));
    f.run_to(milliseconds(1750));  // claim 3 committed at 1.51 s, stage-ready by 1.635 s
    EXPECT_EQ(f.since(f.info(3).timeline.committed), milliseconds(1510));
    EXPECT_EQ(f.info(4).state, ClaimState::kPlanned);
    f.retrieve(3, milliseconds(10));
    f.run_to(seconds(2));
    EXPECT_EQ(f.since(f.info(4).timeline.committed), milliseconds(1760));
  }
}

TEST(ControllerRefusal, AParkedClaimWithAnObjectGoneFromTheStoreIsAttemptedAndEnds) {
  Fixture f("tempokv", SimStackOptions{.capacity_objects = 16, .budget_objects = 2});
  ASSERT_NO_FATAL_FAILURE(hold_the_budget_and_refuse_claim_2(f));
  const uint64_t changes = f.stack.store->index_changes();
  std::optional<Status> removed;
  f.stack.store->remove(obj(4), [&](Status st) { removed = st; });
  // The next evaluation (a tick) unparks it; the room is still taken, but the store has changed,
  // so it is walked and attempted as before, and the commit's store check ends it.
  f.run_to(seconds(2));
  ASSERT_TRUE(removed.has_value() && removed->is_ok());
  EXPECT_GT(f.stack.store->index_changes(), changes);
  EXPECT_EQ(f.info(2).state, ClaimState::kReleased);
  EXPECT_EQ(f.info(2).failure.code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tempokv
