// Controller scenarios on the simulated stack (tests/provider/sim_fixture.h): one 64 MiB object
// alone takes 62.5 ms; two in flight share 1 GiB/s and both finish at 125 ms.
#include "controller/controller.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "controller/controller_fixture.h"

namespace tempokv {
namespace {

using std::chrono::milliseconds;
using testing::Fixture;
using testing::kObj;
using testing::manifest;
using testing::SimStack;
using testing::SimStackOptions;

TEST(Controller, DemandCommitsOnlyWhenRetrievalIsRequested) {
  Fixture f("demand");
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2}), milliseconds(1000)).is_ok());
  f.run_to(milliseconds(1000));
  EXPECT_EQ(f.info(1).state, ClaimState::kPlanned);
  EXPECT_EQ(f.stack.tier->stats().reserved_bytes, 0u);
  auto answer = f.controller->request_retrieval(1, f.recorder());
  ASSERT_TRUE(answer.is_ok());
  EXPECT_EQ(*answer, RetrievalAnswer::kWait);
  f.stack.ex.run();
  ASSERT_EQ(f.answers.count(1), 1u);
  EXPECT_EQ(f.answers.at(1).first, f.at(milliseconds(1125)));
  EXPECT_EQ(*f.answers.at(1).second, RetrievalPath::kStaged);
  EXPECT_EQ(f.info(1).state, ClaimState::kStageReady);
}

TEST(Controller, ImmediateCommitsAtReportAndAccruesByteTimeUntilRelease) {
  Fixture f("immediate");
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2}), milliseconds(1000)).is_ok());
  EXPECT_EQ(f.info(1).state, ClaimState::kStaging);
  f.run_to(milliseconds(500));
  EXPECT_EQ(f.info(1).timeline.ready, f.at(milliseconds(125)));
  EXPECT_EQ(*f.controller->request_retrieval(1, f.recorder()), RetrievalAnswer::kReady);
  ASSERT_TRUE(f.controller->begin_transfer(1).is_ok());
  EXPECT_EQ(f.info(1).state, ClaimState::kTransferring);
  f.run_to(milliseconds(600));
  ASSERT_TRUE(f.controller->end_transfer(1).is_ok());
  EXPECT_EQ(f.info(1).state, ClaimState::kReleased);
  EXPECT_EQ(f.stack.tier->stats().protected_bytes, 0u);
  // 128 MiB reserved, then protected, from 0 to 600 ms.
  EXPECT_DOUBLE_EQ(f.controller->stats().protected_gib_s, 0.125 * 0.6);
  EXPECT_TRUE(f.stack.tier->resident(testing::obj(1)));  // stays as ordinary cache
}

TEST(Controller, TempoKvCommitsWhenLaxityReachesZero) {
  Fixture f("tempokv");
  // TTU 1 s, TTR 125 ms: laxity reaches zero at 875 ms, where the controller wakes.
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2}), milliseconds(1000)).is_ok());
  f.run_to(milliseconds(874));
  EXPECT_EQ(f.info(1).state, ClaimState::kPlanned);
  f.run_to(milliseconds(875));
  EXPECT_EQ(f.info(1).timeline.committed, f.at(milliseconds(875)));
  f.stack.ex.run();
  EXPECT_EQ(f.info(1).timeline.ready, f.at(milliseconds(1000)));
}

TEST(Controller, QueueKCommitsOnlyTheFirstKWaiting) {
  Fixture f("queue-1");
  ASSERT_TRUE(f.controller->report(1, manifest({1}), milliseconds(1000)).is_ok());
  ASSERT_TRUE(f.controller->report(2, manifest({2}), milliseconds(2000)).is_ok());
  std::vector<ClaimId> order{1, 2};
  ASSERT_TRUE(f.controller->update({}, order).is_ok());
  EXPECT_EQ(f.info(1).state, ClaimState::kStaging);
  EXPECT_EQ(f.info(2).state, ClaimState::kPlanned);
  std::vector<ClaimId> next{2};
  ASSERT_TRUE(f.controller->update({}, next).is_ok());
  EXPECT_EQ(f.info(2).state, ClaimState::kStaging);
}

TEST(Controller, RefusedClaimTakesTheOrdinaryPathAndNeverCommitsLater) {
  Fixture f("immediate");  // budget: 8 objects
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2, 3, 4, 5, 6}), milliseconds(100)).is_ok());
  ASSERT_TRUE(f.controller->report(2, manifest({7, 8, 9, 10}), milliseconds(100)).is_ok());
  EXPECT_EQ(f.info(2).state, ClaimState::kPlanned);
  EXPECT_TRUE(f.info(2).refused);
  auto answer = f.controller->request_retrieval(2, f.recorder());
  ASSERT_TRUE(answer.is_ok());
  EXPECT_EQ(*answer, RetrievalAnswer::kWait);
  EXPECT_EQ(f.info(2).state, ClaimState::kOrdinary);
  f.stack.ex.run();
  ASSERT_EQ(f.answers.count(2), 1u);
  EXPECT_EQ(*f.answers.at(2).second, RetrievalPath::kOrdinary);
  // Releasing claim 1 frees the budget; claim 2 stays ordinary.
  ASSERT_EQ(*f.controller->request_retrieval(1, f.recorder()), RetrievalAnswer::kReady);
  ASSERT_TRUE(f.controller->begin_transfer(1).is_ok());
  ASSERT_TRUE(f.controller->end_transfer(1).is_ok());
  EXPECT_EQ(f.info(2).state, ClaimState::kOrdinary);
  ASSERT_TRUE(f.controller->begin_transfer(2).is_ok());
  ASSERT_TRUE(f.controller->end_transfer(2).is_ok());
  EXPECT_EQ(f.controller->stats().refused_claims, 1u);
  EXPECT_EQ(f.controller->stats().ordinary, 1u);
  EXPECT_TRUE(f.stack.provider->check_invariants().is_ok());
}

TEST(Controller, CancelDuringStagingKeepsProtectionUntilTheReadLands) {
  Fixture f("immediate");
  ASSERT_TRUE(f.controller->report(1, manifest({1}), milliseconds(100)).is_ok());
  f.run_to(milliseconds(10));
  ASSERT_TRUE(f.controller->cancel(1).is_ok());
  EXPECT_EQ(f.info(1).state, ClaimState::kReleased);
  EXPECT_EQ(f.stack.tier->stats().reserved_bytes + f.stack.tier->stats().protected_bytes, kObj);
  f.stack.ex.run();
  EXPECT_EQ(f.stack.tier->stats().reserved_bytes + f.stack.tier->stats().protected_bytes, 0u);
  // C counts the 64 MiB until the read landed at 62.5 ms, not until the cancel.
  EXPECT_DOUBLE_EQ(f.controller->stats().protected_gib_s, 0.0625 * 0.0625);
}

TEST(Controller, BadCallsGetErrorsNamingTheProblem) {
  Fixture f("tempokv", SimStackOptions{.budget_objects = 2});
  EXPECT_EQ(f.controller->report(1, {}, milliseconds(1)).code(), StatusCode::kInvalidArgument);
  // Larger than the budget goes ordinary (controller_end_test.cc); larger than the tier cannot.
  std::vector<uint64_t> seventeen;
  for (uint64_t i = 1; i <= 17; ++i) seventeen.push_back(i);
  Status too_big = f.controller->report(2, manifest(seventeen), milliseconds(1));
  EXPECT_EQ(too_big.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_big.message().find("more than the fast tier"), std::string::npos);
  ASSERT_TRUE(f.controller->report(3, manifest({1}), milliseconds(1000)).is_ok());
  EXPECT_EQ(f.controller->report(3, manifest({1}), milliseconds(1)).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(f.controller->begin_transfer(3).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(f.controller->begin_transfer(99).code(), StatusCode::kNotFound);
  EXPECT_EQ(f.controller->request_retrieval(99, nullptr).status().code(), StatusCode::kNotFound);
  std::pair<ClaimId, Duration> unknown{42, milliseconds(1)};
  EXPECT_EQ(f.controller->update({&unknown, 1}, {}).code(), StatusCode::kNotFound);
}

TEST(ClaimState, OnlyTheDesignedTransitionsAreAllowed) {
  using S = ClaimState;
  EXPECT_TRUE(transition_allowed(S::kPlanned, S::kOrdinary));
  EXPECT_TRUE(transition_allowed(S::kStaging, S::kStageReady));
  EXPECT_FALSE(transition_allowed(S::kOrdinary, S::kStaging));
  EXPECT_FALSE(transition_allowed(S::kStaging, S::kTransferring));
  EXPECT_FALSE(transition_allowed(S::kReleased, S::kPlanned));
  EXPECT_FALSE(transition_allowed(S::kPlanned, S::kTransferring));
}

TEST(CommitPolicy, NamesParseAndUnknownNamesAreErrors) {
  for (const char* name : {"demand", "immediate", "queue-1", "queue-4", "tempokv",
                           "tempokv-no-state-ttr"}) {
    auto p = make_commit_policy(name);
    ASSERT_TRUE(p.is_ok()) << name;
    EXPECT_EQ((*p)->name(), name);
  }
  EXPECT_FALSE(make_commit_policy("queue-0").is_ok());
  EXPECT_FALSE(make_commit_policy("lru").is_ok());
  // TempoKV's other variants are its policy with controller options off (make_controller).
  EXPECT_FALSE(make_commit_policy("tempokv-static").is_ok());
}

TEST(CommitPolicy, LaxityGivenEqualsLaxityThroughTheInputsFunctions) {
  // The window walk asks laxity_given() for bounds of the TTRs; it must be laxity() exactly.
  std::mt19937_64 rng(7);
  auto any = [&] { return Duration(static_cast<int64_t>(rng() % 20'000'000'000) - 5'000'000'000); };
  for (const char* name : {"demand", "immediate", "queue-4", "tempokv", "tempokv-no-state-ttr"}) {
    auto p = make_commit_policy(name);
    ASSERT_TRUE(p.is_ok()) << name;
    for (int i = 0; i < 1000; ++i) {
      const Duration ttu = any(), ttr = any(), static_ttr = any(), margin = any();
      const uint32_t rank = i % 3 == 0 ? UINT32_MAX : static_cast<uint32_t>(rng() % 8);
      const std::function<Duration()> ttr_at = [ttr] { return ttr; };
      const std::function<Duration()> static_at = [static_ttr] { return static_ttr; };
      EXPECT_EQ((*p)->laxity_given(ttu, rank, ttr, static_ttr, margin),
                (*p)->laxity(EligibilityInput{ttu, rank, ttr_at, static_at, margin}))
          << name;
    }
  }
}

TEST(Controller, TheCommittablePrefixIsTheLongestThatFitsTheProtectedBudget) {
  Fixture f("tempokv");  // a budget of 8 objects
  EXPECT_EQ(f.controller->committable_prefix(manifest({1, 2, 3, 4, 5, 6, 7, 8, 9, 10})), 8u);
  EXPECT_EQ(f.controller->committable_prefix(manifest({1, 2, 3})), 3u);
  // An object listed twice is protected once.
  EXPECT_EQ(f.controller->committable_prefix(manifest({1, 1, 2, 3, 4, 5, 6, 7, 8, 9})), 9u);
  EXPECT_EQ(f.controller->committable_prefix({}), 0u);
}

}  // namespace
}  // namespace tempokv
