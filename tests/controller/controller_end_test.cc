// Claims that always end (issue 11 item 6): a cancel during a copy ends the transfer when the
// copier reports, a hit larger than the budget goes down the ordinary path, a released id can be
// reported again. On the simulated stack: one 64 MiB object alone takes 62.5 ms; two in flight
// share 1 GiB/s and both finish at 125 ms.
#include <gtest/gtest.h>

#include "controller/controller.h"
#include "controller/controller_fixture.h"

namespace tempokv {
namespace {

using std::chrono::milliseconds;
using testing::Fixture;
using testing::kObj;
using testing::manifest;
using testing::SimStackOptions;

TEST(ControllerEnd, CancelDuringTransferKeepsProtectionUntilTheCopierReportsThenFreesIt) {
  Fixture f("immediate");
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2}), milliseconds(1000)).is_ok());
  f.run_to(milliseconds(200));
  ASSERT_EQ(*f.controller->request_retrieval(1, f.recorder()), RetrievalAnswer::kReady);
  ASSERT_TRUE(f.controller->begin_transfer(1).is_ok());
  f.run_to(milliseconds(300));
  ASSERT_TRUE(f.controller->cancel(1).is_ok());
  // The copy may still be reading the objects: still protected, still visible as transferring.
  EXPECT_EQ(f.info(1).state, ClaimState::kTransferring);
  EXPECT_TRUE(f.info(1).cancelled);
  EXPECT_EQ(f.stack.tier->stats().protected_bytes, 2 * kObj);
  EXPECT_EQ(f.controller->cancel(1).code(), StatusCode::kFailedPrecondition);
  f.run_to(milliseconds(400));
  ASSERT_TRUE(f.controller->end_transfer(1).is_ok());  // the copier reports
  EXPECT_EQ(f.info(1).state, ClaimState::kReleased);
  EXPECT_EQ(f.since(f.info(1).timeline.released), milliseconds(400));
  EXPECT_EQ(f.stack.tier->stats().protected_bytes, 0u);
  EXPECT_EQ(f.controller->stats().cancelled, 1u);
  EXPECT_EQ(f.controller->stats().released, 0u);
  EXPECT_EQ(f.stack.provider->stats().claims, 0u);
  // 128 MiB budgeted from 0 to 400 ms.
  EXPECT_DOUBLE_EQ(f.controller->stats().protected_gib_s, 0.125 * 0.4);
  EXPECT_TRUE(f.stack.provider->check_invariants().is_ok());
}

TEST(ControllerEnd, CancelOfAnOrdinaryClaimBeingCopiedEndsItsHoldsAtEndTransfer) {
  Fixture f("demand", SimStackOptions{.budget_objects = 1});
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2}), milliseconds(1)).is_ok());
  ASSERT_EQ(*f.controller->request_retrieval(1, f.recorder()), RetrievalAnswer::kWait);
  f.run_to(milliseconds(200));
  ASSERT_EQ(f.since(f.answers.at(1).first), milliseconds(125));
  ASSERT_EQ(*f.answers.at(1).second, RetrievalPath::kOrdinary);
  ASSERT_TRUE(f.controller->begin_transfer(1).is_ok());
  ASSERT_TRUE(f.controller->cancel(1).is_ok());
  EXPECT_EQ(f.info(1).state, ClaimState::kOrdinary);
  EXPECT_EQ(f.stack.tier->stats().pinned_bytes, 2 * kObj);  // held while the copy runs
  f.run_to(milliseconds(250));
  ASSERT_TRUE(f.controller->end_transfer(1).is_ok());
  EXPECT_EQ(f.info(1).state, ClaimState::kReleased);
  EXPECT_EQ(f.since(f.info(1).timeline.transfer_end), milliseconds(250));
  EXPECT_EQ(f.stack.tier->stats().pinned_bytes, 0u);
  EXPECT_EQ(f.stack.provider->stats().claims, 0u);
}

TEST(ControllerEnd, AHitLargerThanTheBudgetTakesTheOrdinaryPathWithoutProtection) {
  Fixture f("immediate");  // budget 8 objects, tier 16
  std::vector<uint64_t> ten{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  ASSERT_TRUE(f.controller->report(1, manifest(ten), milliseconds(100)).is_ok());
  EXPECT_TRUE(f.info(1).ordinary_only);
  f.run_to(milliseconds(100));
  EXPECT_EQ(f.info(1).state, ClaimState::kPlanned);  // never committed, never refused
  EXPECT_FALSE(f.info(1).refused);
  EXPECT_EQ(f.controller->stats().refused_attempts, 0u);
  ASSERT_EQ(*f.controller->request_retrieval(1, f.recorder()), RetrievalAnswer::kWait);
  EXPECT_EQ(f.info(1).state, ClaimState::kOrdinary);
  f.stack.ex.run();
  // Ten reads, two at a time: 5 x 125 ms after the request at 100 ms.
  ASSERT_EQ(f.answers.count(1), 1u);
  EXPECT_EQ(f.since(f.answers.at(1).first), milliseconds(725));
  EXPECT_EQ(*f.answers.at(1).second, RetrievalPath::kOrdinary);
  EXPECT_EQ(f.controller->stats().protected_gib_s, 0.0);
  ASSERT_TRUE(f.controller->begin_transfer(1).is_ok());
  ASSERT_TRUE(f.controller->end_transfer(1).is_ok());
  EXPECT_EQ(f.stack.tier->stats().pinned_bytes, 0u);
}

TEST(ControllerEnd, AReleasedClaimsIdMayBeReportedAgain) {
  Fixture f("immediate");
  ASSERT_TRUE(f.controller->report(1, manifest({1}), milliseconds(100)).is_ok());
  f.run_to(milliseconds(10));  // its read is in flight
  ASSERT_TRUE(f.controller->cancel(1).is_ok());
  EXPECT_EQ(f.controller->report(1, manifest({2}), milliseconds(100)).code(),
            StatusCode::kFailedPrecondition);  // the provider still drains the read
  f.run_to(milliseconds(100));
  ASSERT_TRUE(f.controller->report(1, manifest({2}), milliseconds(100)).is_ok());
  EXPECT_EQ(f.info(1).state, ClaimState::kStaging);
  f.stack.ex.run();
  EXPECT_EQ(f.since(f.info(1).timeline.ready), milliseconds(100) + testing::kObjTime);
}

}  // namespace
}  // namespace tempokv
