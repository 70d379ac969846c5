// A parked claim whose count of freed bytes has been reached is checked against the room before it
// goes back into the walk (Controller::refused_again): refused again without a commit attempt
// while its room is taken, committed once it fits, and attempted as before (so the store check
// ends it) once an object has left the store.
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

TEST(ControllerRefusal, AClaimWhoseFreedRoomWasTakenAgainIsRefusedWithoutACommitAttempt) {
  Fixture f("tempokv", SimStackOptions{.capacity_objects = 16, .budget_objects = 2});
  ASSERT_NO_FATAL_FAILURE(hold_the_budget_and_refuse_claim_2(f));
  const uint64_t commits_refused = f.stack.provider->stats().refusals;
  const ControllerStats before = f.controller->stats();
  ASSERT_TRUE(f.controller->update_estimates({}).is_ok());
  EXPECT_EQ(f.info(2).state, ClaimState::kPlanned);
  // Refused by the provider's check alone: no commit reached the provider, no TTR was projected.
  EXPECT_EQ(f.stack.provider->stats().refusals, commits_refused);
  EXPECT_EQ(f.controller->stats().refused_attempts, before.refused_attempts + 1);
  EXPECT_EQ(f.controller->stats().ttr_queries, before.ttr_queries);
  // Claim 101 is stage-ready by 1.125 s; its release frees the room and claim 2 commits then.
  f.run_to(milliseconds(1500));
  EXPECT_EQ(f.info(2).state, ClaimState::kPlanned);
  ASSERT_EQ(f.stack.provider->phase(101), ClaimPhase::kStageReady);
  ASSERT_TRUE(f.stack.provider->release(101).is_ok());
  ASSERT_TRUE(f.controller->update_estimates({}).is_ok());
  EXPECT_EQ(f.info(2).state, ClaimState::kStaging);
  EXPECT_EQ(f.since(f.info(2).timeline.committed), milliseconds(1500));
  EXPECT_EQ(f.stack.provider->stats().refusals, commits_refused);
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
