// ControllerOptions::wait_for_reads_ahead: an eligible TempoKV claim whose reads would share the
// device with reads that all end before its own waits for them, commits when they have drained,
// and is ready exactly when it would have been, holding less protected byte-time meanwhile.
#include <gtest/gtest.h>

#include "controller/controller_fixture.h"

namespace tempokv {
namespace {

using std::chrono::milliseconds;
using testing::Fixture;
using testing::kObjTime;
using testing::manifest;
using testing::SimStackOptions;

ControllerOptions waiting(bool on) {
  ControllerOptions co;
  co.wait_for_reads_ahead = on;
  co.error_feedback = false;  // the plain rule: commit times follow from TTU and TTR alone
  co.chain_deadlines = false;  // each claim timed alone (the chain: controller_chain_test.cc)
  return co;
}

// Two claims of two objects used at one instant (1 s), as vLLM's waiting loads all start at the
// first free slot. Both reach zero laxity at 875 ms (125 ms of reads each, alone); once claim 1
// has committed, claim 2's reads would go behind claim 1's.
struct Pair {
  explicit Pair(bool wait) : f("tempokv", SimStackOptions{.max_reads_in_flight = 2}, waiting(wait)) {
    EXPECT_TRUE(f.controller->report(1, manifest({1, 2}), milliseconds(1000)).is_ok());
    EXPECT_TRUE(f.controller->report(2, manifest({3, 4}), milliseconds(1000)).is_ok());
    f.run_to(milliseconds(1500));
  }
  Fixture f;
};

TEST(ControllerWait, AClaimUsedWithAnotherCommitsWhenTheOthersReadsHaveDrained) {
  Pair with(true), without(false);
  EXPECT_EQ(with.f.since(with.f.info(1).timeline.committed), milliseconds(875));
  EXPECT_EQ(with.f.since(with.f.info(2).timeline.committed), milliseconds(1000));
  EXPECT_EQ(without.f.since(without.f.info(2).timeline.committed), milliseconds(875));
  // Ready at the same moments either way: claim 2's reads were queued behind claim 1's.
  for (ClaimId id : {1, 2}) {
    EXPECT_EQ(with.f.info(id).timeline.ready, without.f.info(id).timeline.ready) << id;
  }
  EXPECT_EQ(with.f.since(with.f.info(2).timeline.ready), milliseconds(875) + 4 * kObjTime);
  EXPECT_GE(with.f.controller->stats().commit_waits, 1u);
  EXPECT_EQ(without.f.controller->stats().commit_waits, 0u);
  // Claim 2's 128 MiB were not reserved for the 125 ms it waited.
  EXPECT_NEAR(without.f.controller->stats().protected_gib_s - with.f.controller->stats().protected_gib_s,
              0.125 * 0.125, 1e-9);
}

TEST(ControllerWait, AClaimWhoseReadWouldEndBeforeTheReadsAheadDoesNotWait) {
  // Four slots. Claims 1 and 2 (two objects each) are used at 1 s: claim 1 commits at 875 ms, and
  // claim 2, whose reads would share the device with claim 1's and end after them, waits. Claim 3
  // (one small object, a third of the others) used at 1 s too would end before claim 1's reads:
  // it commits when its laxity reaches zero, while claim 2 still waits, and is ready on time.
  SimStackOptions o{.max_reads_in_flight = 4, .small_every = 10};
  Fixture f("tempokv", o, waiting(true));
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2}), milliseconds(1000)).is_ok());
  ASSERT_TRUE(f.controller->report(2, manifest({3, 4}), milliseconds(1000)).is_ok());
  std::vector<ManifestEntry> small = {{testing::obj(10), testing::obj_bytes(10, 10)}};
  ASSERT_TRUE(f.controller->report(3, small, milliseconds(1000)).is_ok());
  f.run_to(milliseconds(876));
  EXPECT_EQ(f.since(f.info(1).timeline.committed), milliseconds(875));
  EXPECT_EQ(f.info(2).state, ClaimState::kPlanned);
  f.run_to(milliseconds(1500));
  const Duration c3 = f.since(f.info(3).timeline.committed);
  EXPECT_GT(c3, milliseconds(875));
  EXPECT_GT(f.since(f.info(2).timeline.committed), c3);
  EXPECT_LE(f.since(f.info(3).timeline.ready), milliseconds(1000) + std::chrono::microseconds(1));
}

// The wait is a mechanism of its own: TempoKV's rule with the fixed-rate TTR (blind to claim 1's
// reads, so claim 2 is eligible at 875 ms too) still lets claim 2 wait for them.
TEST(ControllerWait, TheFixedRateTtrRuleWaitsToo) {
  Fixture f("tempokv-no-state-ttr", SimStackOptions{.max_reads_in_flight = 2}, waiting(true));
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2}), milliseconds(1000)).is_ok());
  ASSERT_TRUE(f.controller->report(2, manifest({3, 4}), milliseconds(1000)).is_ok());
  f.run_to(milliseconds(1500));
  EXPECT_GT(f.controller->stats().commit_waits, 0u);
  EXPECT_EQ(f.since(f.info(1).timeline.committed), milliseconds(875));
  EXPECT_GT(f.info(2).timeline.committed, f.info(1).timeline.committed);
}

TEST(ControllerWait, ARetrievalRequestedDuringTheWaitCommitsAtOnce) {
  Pair p(true);  // ran to 1.5 s; use a fresh pair stopped inside the wait instead
  Fixture f("tempokv", SimStackOptions{.max_reads_in_flight = 2}, waiting(true));
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2}), milliseconds(1000)).is_ok());
  ASSERT_TRUE(f.controller->report(2, manifest({3, 4}), milliseconds(1000)).is_ok());
  f.run_to(milliseconds(900));
  ASSERT_EQ(f.info(2).state, ClaimState::kPlanned);
  f.retrieve(2, milliseconds(10));
  EXPECT_EQ(f.since(f.info(2).timeline.committed), milliseconds(900));
  f.stack.ex.run();
  // Its reads went behind claim 1's all the same: ready when it would have been.
  EXPECT_EQ(f.info(2).timeline.ready, p.f.info(2).timeline.ready);
}

TEST(ControllerWait, AWaitingClaimsTimingErrorIsJudgedFromWhereItFirstWaited) {
  // Claim 2 waits from 875 ms (projected use 1 s, TTR 250 ms). At 950 ms its projected use moves
  // to 980 ms, and it is used then: committed at its use, ready at 1125 ms as eager TempoKV's
  // commit at 875 would have been. Judged from 875 its use came 20 ms sooner than projected, so
  // the margin becomes 20 ms; judged from its commit at its use it would show no error at all.
  ControllerOptions co;  // error feedback on
  co.chain_deadlines = false;
  Fixture f("tempokv", SimStackOptions{.max_reads_in_flight = 2}, co);
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2}), milliseconds(1000)).is_ok());
  ASSERT_TRUE(f.controller->report(2, manifest({3, 4}), milliseconds(1000)).is_ok());
  f.run_to(milliseconds(950));
  ASSERT_EQ(f.info(2).state, ClaimState::kPlanned);
  std::pair<ClaimId, Duration> sooner{2, milliseconds(30)};
  ASSERT_TRUE(f.controller->update_estimates({&sooner, 1}).is_ok());
  f.stack.ex.at(f.at(milliseconds(980)), [&f] { f.retrieve(2, milliseconds(10)); });
  f.stack.ex.at(f.at(milliseconds(1000)), [&f] { f.retrieve(1, milliseconds(10)); });
  f.stack.ex.run();
  EXPECT_EQ(f.since(f.info(2).timeline.committed), milliseconds(980));
  EXPECT_EQ(f.since(f.info(2).timeline.ready), milliseconds(1125));
  EXPECT_EQ(f.controller->feedback_margin(), milliseconds(20));
}

}  // namespace
}  // namespace tempokv
