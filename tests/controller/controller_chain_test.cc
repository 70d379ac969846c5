// ControllerOptions::chain_deadlines: a TempoKV claim is ready early enough for the planned
// claims used after it to be read after it, so claims used at one instant (vLLM starts every
// waiting load at the first free slot) are read one after another and all are ready at their use.
#include <gtest/gtest.h>

#include "controller/controller_fixture.h"

namespace tempokv {
namespace {

using std::chrono::milliseconds;
using testing::Fixture;
using testing::manifest;
using testing::SimStackOptions;

ControllerOptions chained(bool on) {
  ControllerOptions co;
  co.error_feedback = false;  // the plain rule: commit times follow from TTU and TTR alone
  co.chain_deadlines = on;
  return co;
}

// Four claims of two objects each (a pair: 125 ms with two reads in flight), all used at 1 s.
struct Batch {
  explicit Batch(bool chain)
      : f("tempokv", SimStackOptions{.max_reads_in_flight = 2}, chained(chain)) {
    for (ClaimId id = 1; id <= 4; ++id) {
      EXPECT_TRUE(
          f.controller->report(id, manifest({2 * id - 1, 2 * id}), milliseconds(1000)).is_ok());
    }
    f.run_to(milliseconds(1500));
  }
  Fixture f;
};

TEST(ControllerChain, ClaimsUsedAtOneInstantAreReadOneAfterAnotherAndAllAreOnTime) {
  // Claim 4 must start by 875, so claim 3 must be ready then, claim 2 by 750 and claim 1 by 625:
  // claim 1 commits at 500, each next one when the reads ahead of it have drained (the wait).
  Batch with(true);
  for (ClaimId id = 1; id <= 4; ++id) {
    const Duration start = milliseconds(500) + (id - 1) * milliseconds(125);
    EXPECT_EQ(with.f.since(with.f.info(id).timeline.committed), start) << id;
    EXPECT_EQ(with.f.since(with.f.info(id).timeline.ready), start + milliseconds(125)) << id;
  }
  // Timed alone, each reaches zero laxity at 875 and waits for the reads ahead: the last is
  // ready three pairs late.
  Batch without(false);
  for (ClaimId id = 1; id <= 4; ++id) {
    const Duration start = milliseconds(875) + (id - 1) * milliseconds(125);
    EXPECT_EQ(without.f.since(without.f.info(id).timeline.committed), start) << id;
    EXPECT_EQ(without.f.since(without.f.info(id).timeline.ready), start + milliseconds(125)) << id;
  }
  // Being on time costs protected byte-time: each holds its 128 MiB three pairs longer (none is
  // used here, so all are held to the end).
  EXPECT_NEAR(with.f.controller->stats().protected_gib_s -
                  without.f.controller->stats().protected_gib_s,
              4 * 0.125 * 0.375, 1e-9);
}

// ControllerOptions::chain_skips_bounds: a claim whose TTU is only a lower bound (reported beyond
// its runtime's horizon) is no member of the chain: by its bound it would be used with claims 1-3
// and make each start a pair earlier.
TEST(ControllerChain, AClaimProjectedOnlyToALowerBoundIsNoMember) {
  ControllerOptions co = chained(true);
  co.chain_skips_bounds = true;
  Fixture f("tempokv", SimStackOptions{.max_reads_in_flight = 2}, co);
  const TimePoint t0 = f.controller->now();
  // Claims 1-3 used at 1 s; claim 4 at 5 s, first projected only to a bound of 1 s.
  auto update = [&](bool bound) {
    const Duration at = f.controller->now() - t0;
    std::vector<std::pair<ClaimId, Duration>> ttus;
    for (ClaimId id = 1; id <= 3; ++id) ttus.emplace_back(id, milliseconds(1000) - at);
    ttus.emplace_back(4, (bound ? milliseconds(1000) : milliseconds(5000)) - at);
    const ClaimId order[] = {1, 2, 3, 4};
    const uint8_t flags[] = {0, 0, 0, static_cast<uint8_t>(bound ? 1 : 0)};
    ASSERT_TRUE(f.controller->update(ttus, order, 0, flags).is_ok());
  };
  f.controller->set_reviser(0, [&] { update(false); });
  for (ClaimId id = 1; id <= 4; ++id) {
    ASSERT_TRUE(
        f.controller->report(id, manifest({2 * id - 1, 2 * id}), std::chrono::hours(1)).is_ok());
  }
  update(true);
  f.run_to(milliseconds(1500));
  // Claim 3 starts its pair at 875, claim 2 at 750, claim 1 at 625 (at 500 with claim 4 a member).
  for (ClaimId id = 1; id <= 3; ++id) {
    EXPECT_EQ(f.since(f.info(id).timeline.committed),
              milliseconds(625) + (id - 1) * milliseconds(125))
        << id;
  }
  EXPECT_EQ(f.info(4).state, ClaimState::kPlanned);  // its exact use is 5 s away
}

// The chain's gather steps through a few index entries per pass however long the queue of bounds
// behind the chain: a bound projected later than it was keyed keeps its key (a key may lag its
// use), so every such bound sorts before the soonest uses the gather holds, and only "the first
// bound once the chain's length is gathered ends it" stops the walk (without it: every claim at
// every pass).
TEST(ControllerChain, TheGatherEndsAtTheFirstBoundOnceItHoldsTheChainsLength) {
  ControllerOptions co = chained(true);
  co.chain_skips_bounds = true;
  Fixture f("tempokv", SimStackOptions{}, co);
  constexpr ClaimId kClaims = 2000;
  std::vector<std::pair<ClaimId, Duration>> ttus;
  std::vector<ClaimId> order;
  for (ClaimId id = 1; id <= kClaims; ++id) {
    ASSERT_TRUE(f.controller->report(id, manifest({1 + id % 32}), milliseconds(5000)).is_ok());
    ttus.emplace_back(id, milliseconds(5500));  // keyed at 5 s: within the lag allowed 5 s ahead
    order.push_back(id);
  }
  const std::vector<uint8_t> bounds(kClaims, 1);
  ASSERT_TRUE(f.controller->update(ttus, order, 0, bounds).is_ok());
  const ControllerStats before = f.controller->stats();
  f.run_to(milliseconds(1000));  // the ticks' passes over the same queue
  const ControllerStats after = f.controller->stats();
  const uint64_t passes = after.evaluations - before.evaluations;
  ASSERT_GE(passes, 10u);
  EXPECT_EQ(after.commits, 0u);
  // Each of the four indexes: at most the chain's length gathered and the bound that ends it.
  EXPECT_LE(after.chain_visits - before.chain_visits, passes * 4 * (co.chain_length + 1));
}

TEST(ControllerChain, AClaimWithNothingToReadIsNotMadeEarly) {
  // Objects 1-2 are resident (a claim used at once staged them and was released). Claim 2 (all
  // resident) and claim 3 (objects 3-4) are used at 1 s: claim 3 starts its pair at 875, and
  // claim 2, which reads nothing, need not be ready before it: it commits at its use.
  Fixture f("tempokv", SimStackOptions{.max_reads_in_flight = 2}, chained(true));
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2}), milliseconds(0)).is_ok());
  f.retrieve(1, milliseconds(10));
  f.run_to(milliseconds(200));
  ASSERT_EQ(f.info(1).state, ClaimState::kReleased);
  ASSERT_TRUE(f.controller->report(2, manifest({1, 2}), milliseconds(800)).is_ok());
  ASSERT_TRUE(f.controller->report(3, manifest({3, 4}), milliseconds(800)).is_ok());
  f.run_to(milliseconds(1500));
  EXPECT_EQ(f.since(f.info(3).timeline.committed), milliseconds(875));
  EXPECT_EQ(f.since(f.info(2).timeline.committed), milliseconds(1000));
  EXPECT_EQ(f.since(f.info(2).timeline.ready), milliseconds(1000));
}

TEST(ControllerChain, TheUnchainedConfigurationTimesEachClaimAlone) {
  testing::SimStack stack(SimStackOptions{.max_reads_in_flight = 2});
  ControllerOptions co;
  co.error_feedback = false;
  auto c = make_controller(stack.ex, *stack.provider, "tempokv-no-chain", co);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ((*c)->policy_name(), "tempokv");
  for (ClaimId id = 1; id <= 2; ++id) {
    ASSERT_TRUE((*c)->report(id, manifest({2 * id - 1, 2 * id}), milliseconds(1000)).is_ok());
  }
  stack.ex.run_until(stack.t0 + milliseconds(1500));
  EXPECT_EQ(*(*c)->info(1).value().timeline.committed - stack.t0, milliseconds(875));
  EXPECT_EQ(*(*c)->info(2).value().timeline.ready - stack.t0, milliseconds(1125));
}

TEST(ControllerChain, AMarginMovedByARetrievalRequestIsActedOnAtOnce) {
  // Claims 1 and 2 used at 1 s: claim 1 is chained ready at 875 ms. Its retrieval comes at 900 ms,
  // 100 ms sooner than projected: the feedback margin becomes 100 ms at the request, which
  // reevaluates nothing itself (the claim is ready), so the controller decides again at that
  // instant (with nothing planned left to tick for, nothing else would).
  ControllerOptions co;
  co.chain_deadlines = true;
  Fixture f("tempokv", SimStackOptions{.max_reads_in_flight = 2}, co);
  for (ClaimId id = 1; id <= 2; ++id) {
    ASSERT_TRUE(
        f.controller->report(id, manifest({2 * id - 1, 2 * id}), milliseconds(1000)).is_ok());
  }
  f.run_to(milliseconds(900));
  ASSERT_EQ(f.info(1).state, ClaimState::kStageReady);
  ASSERT_EQ(f.since(f.info(1).timeline.ready), milliseconds(875));
  const uint64_t before = f.controller->stats().evaluations;
  ASSERT_TRUE(f.controller->request_retrieval(1, f.recorder()).is_ok());
  EXPECT_EQ(f.controller->feedback_margin(), milliseconds(100));
  f.run_to(milliseconds(900));
  EXPECT_EQ(f.controller->stats().evaluations, before + 1);
}

}  // namespace
}  // namespace tempokv
