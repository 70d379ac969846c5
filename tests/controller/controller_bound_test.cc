// Lower-bound TTUs (Controller::update's lower_bound, what a runtime adapter reports beyond
// ttu_horizon()): a claim is never committed on a bound; its runtime is asked to revise.
#include <gtest/gtest.h>

#include "controller_fixture.h"

namespace tempokv::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Claim 1 (one 64 MiB object: TTR 62.5 ms) is reported far away, then updated with a TTU of
// 10 ms that is only a lower bound: by it the laxity is below zero.
void report_then_bound(Fixture& f) {
  ASSERT_TRUE(f.controller->report(1, manifest({1}), std::chrono::hours(1)).is_ok());
  const std::pair<ClaimId, Duration> bound{1, milliseconds(10)};
  const ClaimId order[] = {1};
  const uint8_t flags[] = {1};
  ASSERT_TRUE(f.controller->update({&bound, 1}, order, 0, flags).is_ok());
}

TEST(ControllerBound, AClaimEligibleOnlyByALowerBoundIsRevisedAndCommittedOnTheExactTtu) {
  Fixture f("tempokv");
  int revisions = 0;
  f.controller->set_reviser(0, [&] {
    ++revisions;
    const std::pair<ClaimId, Duration> exact{1, seconds(2)};
    const ClaimId order[] = {1};
    ASSERT_TRUE(f.controller->update({&exact, 1}, order).is_ok());
  });
  report_then_bound(f);
  EXPECT_EQ(f.info(1).state, ClaimState::kPlanned);  // not on the bound
  EXPECT_EQ(revisions, 0);                            // posted, never inside the evaluation
  f.run_to(Duration::zero());
  EXPECT_EQ(revisions, 1);
  EXPECT_EQ(f.info(1).state, ClaimState::kPlanned);
  f.run_to(seconds(3));
  EXPECT_EQ(revisions, 1);
  // Laxity zero by the exact TTU: 2000 ms less the TTR.
  EXPECT_EQ(f.since(f.info(1).timeline.committed), Duration(milliseconds(2000)) -
                                                       Duration(std::chrono::microseconds(62'500)));
}

TEST(ControllerBound, WithoutAReviserTheBoundIsUsedAsItIs) {
  Fixture f("tempokv");
  report_then_bound(f);
  EXPECT_NE(f.info(1).state, ClaimState::kPlanned);
  EXPECT_EQ(f.since(f.info(1).timeline.committed), Duration::zero());
}

TEST(ControllerBound, ARevisionThatLeavesTheBoundIsNotAskedForAgainAtTheSameInstant) {
  Fixture f("tempokv");
  int revisions = 0;
  f.controller->set_reviser(0, [&] {
    ++revisions;
    const std::pair<ClaimId, Duration> still{1, milliseconds(10)};
    const ClaimId order[] = {1};
    const uint8_t flags[] = {1};
    ASSERT_TRUE(f.controller->update({&still, 1}, order, 0, flags).is_ok());
  });
  report_then_bound(f);
  f.run_to(Duration::zero());
  EXPECT_EQ(revisions, 1);
  EXPECT_EQ(f.since(f.info(1).timeline.committed), Duration::zero());
}

}  // namespace
}  // namespace tempokv::testing
