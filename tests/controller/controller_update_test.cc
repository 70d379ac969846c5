// The per-step update path's reuse of what the last update found: the controller's records of the
// claims an update lists again, and the adapter's records of the requests of an order given again.
// Each must be found anew once what it holds may have changed.
#include <gtest/gtest.h>

#include "adapter/runtime_adapter.h"
#include "controller/controller_fixture.h"

namespace tempokv {
namespace {

using std::chrono::seconds;
using testing::Fixture;
using testing::kObj;
using testing::manifest;

TEST(ControllerUpdate, AnUpdateListingOtherClaimsReachesThoseClaims) {
  Fixture f("tempokv");
  for (ClaimId id : {1, 2}) {
    ASSERT_TRUE(f.controller->report(id, manifest({id}), seconds(10)).is_ok());
  }
  std::vector<std::pair<ClaimId, Duration>> both{{1, seconds(10)}, {2, seconds(10)}};
  std::vector<ClaimId> order{1, 2};
  ASSERT_TRUE(f.controller->update(both, order).is_ok());
  // Claim 2 alone, due now: its record, not the first one the last update listed.
  std::vector<std::pair<ClaimId, Duration>> two{{2, Duration::zero()}};
  ASSERT_TRUE(f.controller->update(two, order).is_ok());
  EXPECT_EQ(f.info(1).state, ClaimState::kPlanned);
  EXPECT_NE(f.info(2).state, ClaimState::kPlanned);
}

TEST(ControllerUpdate, AnUpdateOfAClaimReportedAgainReachesItsNewRecord) {
  Fixture f("tempokv");
  for (ClaimId id : {1, 2}) {
    ASSERT_TRUE(f.controller->report(id, manifest({id}), seconds(10)).is_ok());
  }
  std::vector<std::pair<ClaimId, Duration>> later{{1, seconds(10)}, {2, seconds(10)}};
  std::vector<ClaimId> order{1, 2};
  ASSERT_TRUE(f.controller->update(later, order).is_ok());
  // Claim 1 ends and is reported again (a new record), far away; then the same claims are
  // updated, claim 1 due now.
  ASSERT_TRUE(f.controller->cancel(1).is_ok());
  ASSERT_TRUE(f.controller->report(1, manifest({3}), seconds(10)).is_ok());
  std::vector<std::pair<ClaimId, Duration>> now{{1, Duration::zero()}, {2, seconds(10)}};
  ASSERT_TRUE(f.controller->update(now, order).is_ok());
  EXPECT_NE(f.info(1).state, ClaimState::kPlanned);
  EXPECT_EQ(f.info(2).state, ClaimState::kPlanned);
}

TEST(ControllerUpdate, AnOrderGivenAgainLeavesOutTheRequestsAdmittedSince) {
  testing::SimStack stack;
  Controller controller(stack.ex, *stack.provider, make_commit_policy("queue-1").value());
  const CostProfile profile = testing::steps_profile();
  AdapterOptions o;
  o.max_active = 4;
  auto adapter = RuntimeAdapter::create(controller, profile, o).value();
  for (uint64_t id : {1, 2}) {
    ASSERT_TRUE(adapter->add_request({id, 1000, 256, kObj, 16}).is_ok());
    ASSERT_TRUE(adapter->report_hit(id, manifest({id})).is_ok());
  }
  const std::vector<uint64_t> order{1, 2};
  ASSERT_TRUE(adapter->update_order(order).is_ok());
  EXPECT_EQ(controller.info(1).value().state, ClaimState::kStaging);  // first in the queue
  EXPECT_EQ(controller.info(2).value().state, ClaimState::kPlanned);
  // Request 1 is admitted; the runtime lists it once more: request 2 now leads the queue.
  ASSERT_TRUE(adapter->admitted(1).is_ok());
  ASSERT_TRUE(adapter->update_order(order).is_ok());
  EXPECT_EQ(controller.info(2).value().state, ClaimState::kStaging);
}

}  // namespace
}  // namespace tempokv
