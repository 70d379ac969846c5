// Every commit policy on one small scenario with exact virtual times: when each claim commits,
// when it becomes stage-ready, and the protected byte-time C the run accrues.
//
// Scenario (default SimStack: 1 GiB/s, two reads in flight, 64 MiB objects, budget 8 objects):
//   A = objects 1-4 (256 MiB), TTU 500 ms; B = 5-6 (128 MiB), TTU 600 ms; C = 7-8, TTU 1000 ms.
// Reported at 0 with waiting order [A, B, C]. At each TTU the runtime drops the claim from its
// order, requests retrieval, and copies for 100 ms once the KV may be copied; end_transfer
// releases the claim. A pair of reads takes 125 ms (A alone: 250 ms).
#include <gtest/gtest.h>

#include <array>

#include "controller/controller.h"
#include "controller/controller_fixture.h"

namespace tempokv {
namespace {

using std::chrono::milliseconds;
using testing::Fixture;
using testing::manifest;

constexpr ClaimId kA = 1, kB = 2, kC = 3;

struct Outcome {
  Duration committed[3], ready[3];
  double gib_s;
};

Outcome run_three_claims(const char* policy, ControllerOptions options = {}) {
  Fixture f(policy, {}, options);
  EXPECT_TRUE(f.controller->report(kA, manifest({1, 2, 3, 4}), milliseconds(500)).is_ok());
  EXPECT_TRUE(f.controller->report(kB, manifest({5, 6}), milliseconds(600)).is_ok());
  EXPECT_TRUE(f.controller->report(kC, manifest({7, 8}), milliseconds(1000)).is_ok());
  std::vector<ClaimId> order{kA, kB, kC};
  EXPECT_TRUE(f.controller->update({}, order).is_ok());
  const Duration copy = milliseconds(100);
  auto step = [&f, copy](ClaimId id, std::vector<ClaimId> rest) {
    EXPECT_TRUE(f.controller->update({}, rest).is_ok());
    f.retrieve(id, copy);
  };
  f.stack.ex.at(f.at(milliseconds(500)), [&] { step(kA, {kB, kC}); });
  f.stack.ex.at(f.at(milliseconds(600)), [&] { step(kB, {kC}); });
  f.stack.ex.at(f.at(milliseconds(1000)), [&] { step(kC, {}); });
  f.stack.ex.run();
  Outcome out{};
  for (ClaimId id : {kA, kB, kC}) {
    ClaimInfo i = f.info(id);
    EXPECT_EQ(i.state, ClaimState::kReleased);
    EXPECT_FALSE(i.ordinary);
    out.committed[id - 1] = f.since(i.timeline.committed);
    out.ready[id - 1] = f.since(i.timeline.ready);
  }
  EXPECT_EQ(f.stack.tier->stats().protected_bytes + f.stack.tier->stats().reserved_bytes, 0u);
  out.gib_s = f.controller->stats().protected_gib_s;
  return out;
}

void expect_times(const Outcome& o, std::array<int, 3> committed_ms, std::array<int, 3> ready_ms) {
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(o.committed[i], milliseconds(committed_ms[i])) << "claim " << i + 1;
    EXPECT_EQ(o.ready[i], milliseconds(ready_ms[i])) << "claim " << i + 1;
  }
}

constexpr double kGiBTol = 1e-12;

// The one list of names make_controller() builds, which tempokvd's controller.policy and the
// eval's --policies are checked against: a commit policy's name or a TempoKV variant.
TEST(PolicyScenario, TheControllerConfigurationsAreThePoliciesAndTempoKvsVariants) {
  for (const char* name : {"demand", "immediate", "queue-1", "queue-16", "tempokv",
                           "tempokv-progressive", "tempokv-static", "tempokv-no-wait",
                           "tempokv-no-chain", "tempokv-no-order-stats", "tempokv-no-state-ttr"}) {
    EXPECT_TRUE(is_controller_configuration(name)) << name;
  }
  for (const char* name : {"", "fancy", "queue-", "queue-0", "queue-2x", "tempokv-", "TempoKV",
                           "lmcache-dax"}) {
    EXPECT_FALSE(is_controller_configuration(name)) << name;
  }
  EXPECT_TRUE(is_tempokv_variant("tempokv-no-wait"));
  EXPECT_FALSE(is_tempokv_variant("tempokv"));
}

TEST(PolicyScenario, DemandStagesEachClaimOnlyAtItsRetrieval) {
  // A at 500: pairs 500-625, 625-750 -> ready 750, copy to 850. B at 600 queues behind A's second
  // pair: 750-875, copy to 975. C at 1000: 1000-1125, copy to 1225.
  Outcome o = run_three_claims("demand");
  expect_times(o, {500, 600, 1000}, {750, 875, 1125});
  // 0.25 GiB x 0.35 s + 0.125 x 0.375 + 0.125 x 0.225
  EXPECT_NEAR(o.gib_s, 0.0875 + 0.046875 + 0.028125, kGiBTol);
}

TEST(PolicyScenario, ImmediateStagesEverythingAtReport) {
  // Reads in commit order: A 0-125-250, B 250-375, C 375-500. Releases at 600, 700, 1100.
  Outcome o = run_three_claims("immediate");
  expect_times(o, {0, 0, 0}, {250, 375, 500});
  // 0.25 x 0.6 + 0.125 x 0.7 + 0.125 x 1.1
  EXPECT_NEAR(o.gib_s, 0.15 + 0.0875 + 0.1375, kGiBTol);
}

TEST(PolicyScenario, Queue1StagesTheHeadOfTheQueue) {
  // A at the first order (0): ready 250. B becomes head at 500: 500-625, copy 625-725. C becomes
  // head at 600 and waits for B's pair: 625-750, copy 1000-1100.
  Outcome o = run_three_claims("queue-1");
  expect_times(o, {0, 500, 600}, {250, 625, 750});
  // 0.25 x 0.6 + 0.125 x 0.225 + 0.125 x 0.5
  EXPECT_NEAR(o.gib_s, 0.15 + 0.028125 + 0.0625, kGiBTol);
}

TEST(PolicyScenario, Queue4StagesAllThreeAtTheFirstOrder) {
  // All three are among the first four at the first order update (time 0): as Immediate.
  Outcome o = run_three_claims("queue-4");
  expect_times(o, {0, 0, 0}, {250, 375, 500});
  EXPECT_NEAR(o.gib_s, 0.15 + 0.0875 + 0.1375, kGiBTol);
}

TEST(PolicyScenario, TheFixedRateTtrIgnoresTheBacklogAhead) {
  // TempoKV's rule alone (no feedback, wait or chain) with the fixed-rate TTR = non-resident
  // bytes / 1 GiB/s: A 250 ms -> commits 250, pairs 250-375-500, ready
  // 500. B 125 ms -> commits 475, queues behind A's second pair: 500-625 (late by 25). C 125 ms
  // -> commits 875, ready 1000. Releases: A 600, B 725, C 1100.
  ControllerOptions plain;
  plain.error_feedback = false;
  plain.wait_for_reads_ahead = false;
  plain.chain_deadlines = false;
  Outcome o = run_three_claims("tempokv-no-state-ttr", plain);
  expect_times(o, {250, 475, 875}, {500, 625, 1000});
  // 0.25 x 0.35 + 0.125 x 0.25 + 0.125 x 0.225
  EXPECT_NEAR(o.gib_s, 0.0875 + 0.03125 + 0.028125, kGiBTol);
}

ControllerOptions unchained() {
  ControllerOptions co;
  co.chain_deadlines = false;
  return co;
}

TEST(PolicyScenario, TempoKvReadsAOneAfterTheOtherSoBothAreOnTime) {
  // Chained deadlines: B (600, 125 ms of reads) must start by 475, so A (500, 250 ms) must be
  // ready by 475 and commits at 225; B commits at 475, when A's reads are done and its laxity
  // from its own use reaches zero. Both are ready before their use (timed alone, B is 25 ms late:
  // below). C: alone, zero laxity at 875. Releases: A 600, B 700, C 1100.
  Outcome o = run_three_claims("tempokv");
  expect_times(o, {225, 475, 875}, {475, 600, 1000});
  // 0.25 x 0.375 + 0.125 x 0.225 + 0.125 x 0.225: 6.25e-3 GiB.s more than alone, for B's 25 ms.
  EXPECT_NEAR(o.gib_s, 0.09375 + 0.028125 + 0.028125, kGiBTol);
}

TEST(PolicyScenario, TempoKvSeesTheBacklogItsOwnCommitCreates) {
  // Each claim timed alone (chain_deadlines off). A's laxity reaches zero at 250 (TTR 250). Right after, B's state-aware TTR is 375 (A's pairs
  // until 500, then its own until 625): laxity 350 - 375 < 0, so B is eligible at 250; it cannot
  // be on time either way, and the device is busy throughout. Its reads would wait behind A's, so
  // it waits for them (wait_for_reads_ahead) and commits at 500, ready at 625 all the same. C:
  // laxity 250 until the device idles at 625, then zero at 875. Releases: A 600, B 725, C 1100.
  Outcome o = run_three_claims("tempokv", unchained());
  expect_times(o, {250, 500, 875}, {500, 625, 1000});
  // 0.25 x 0.35 + 0.125 x 0.225 + 0.125 x 0.225
  EXPECT_NEAR(o.gib_s, 0.0875 + 0.028125 + 0.028125, kGiBTol);
}

TEST(PolicyScenario, TempoKvWithoutTheWaitCommitsBehindTheBacklogAtOnce) {
  // The rule before wait_for_reads_ahead: B commits at 250 and holds its 128 MiB while its reads
  // wait behind A's, ready at the same 625.
  ControllerOptions co = unchained();
  co.wait_for_reads_ahead = false;
  Outcome o = run_three_claims("tempokv", co);
  expect_times(o, {250, 250, 875}, {500, 625, 1000});
  // 0.25 x 0.35 + 0.125 x 0.475 + 0.125 x 0.225
  EXPECT_NEAR(o.gib_s, 0.0875 + 0.059375 + 0.028125, kGiBTol);
}

}  // namespace
}  // namespace tempokv
