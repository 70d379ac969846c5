// RemoteTtrModel: per-node TTR from bytes in flight and a measured rate, a claim's parts on
// several nodes in parallel, and an unhealthy node's hold.
#include "remote/remote_ttr.h"

#include <gtest/gtest.h>

namespace tempokv::remote {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr double kGiB = double(1ULL << 30);

RemoteTtrOptions options() {
  RemoteTtrOptions o;
  o.prior_bytes_per_s = kGiB;
  o.latency = milliseconds(1);
  o.unhealthy_hold = seconds(1);
  o.weight = 0.5;
  return o;
}

TEST(RemoteTtr, LatencyPlusInFlightAndOwnBytesOverTheRate) {
  RemoteTtrModel m(options());
  const TimePoint now{};
  EXPECT_EQ(m.ttr({{"a:1", 1ULL << 29}}, now), milliseconds(1) + milliseconds(500));
  m.started("a:1", 1ULL << 30);  // 1 GiB ahead of it on that node
  EXPECT_EQ(m.ttr({{"a:1", 1ULL << 29}}, now), milliseconds(1) + milliseconds(1500));
  // Another node's queue is its own; a claim on both waits for the slower one.
  EXPECT_EQ(m.ttr({{"b:1", 1ULL << 29}}, now), milliseconds(501));
  EXPECT_EQ(m.ttr({{"a:1", 1ULL << 28}, {"b:1", 1ULL << 29}}, now), milliseconds(1251));
  // Two parts on one node add up.
  EXPECT_EQ(m.ttr({{"b:1", 1ULL << 29}, {"b:1", 1ULL << 29}}, now), milliseconds(1001));
}

TEST(RemoteTtr, TheBoundTakesTheMostBytesInFlightAtTheLowestRate) {
  RemoteTtrModel m(options());
  const TimePoint now{};
  // Nothing measured: the prior rate, nothing in flight.
  EXPECT_EQ(m.ttr_bound(1ULL << 29), milliseconds(501) + Duration(1));
  m.started("a:1", 1ULL << 30);
  m.finished("a:1", 1ULL << 30, milliseconds(250), true, false, now);  // a:1 at 4 GiB/s
  m.started("b:1", 1ULL << 30);                                         // 1 GiB ahead on b:1
  m.started("a:1", 1ULL << 28);
  // b:1's 1 GiB in flight, and the prior (1 GiB/s) as the lowest rate: 1.5 s.
  EXPECT_EQ(m.ttr_bound(1ULL << 29), milliseconds(1501) + Duration(1));
  for (const auto& parts : std::vector<std::vector<RemoteTtrModel::Part>>{
           {{"a:1", 1ULL << 29}}, {{"b:1", 1ULL << 29}}, {{"a:1", 1ULL << 28}, {"b:1", 1ULL << 28}},
           {{"c:1", 1ULL << 29}}}) {
    EXPECT_LE(*m.ttr(parts, now), m.ttr_bound(1ULL << 29));
  }
}

TEST(RemoteTtr, TheRateFollowsCompletedFetches) {
  RemoteTtrModel m(options());
  const TimePoint now{};
  m.started("a:1", 1ULL << 30);
  m.finished("a:1", 1ULL << 30, milliseconds(250), true, false, now);  // 4 GiB/s measured
  EXPECT_EQ(m.in_flight("a:1"), 0u);
  EXPECT_DOUBLE_EQ(m.rate("a:1"), 4 * kGiB);  // the first measurement replaces the prior
  m.started("a:1", 1ULL << 30);
  m.finished("a:1", 1ULL << 30, milliseconds(500), true, false, now);  // 2 GiB/s
  EXPECT_DOUBLE_EQ(m.rate("a:1"), 3 * kGiB);                           // weight 0.5
  // A miss of the object (absent, checksum) says nothing of the rate or the node's health.
  m.started("a:1", 1ULL << 20);
  m.finished("a:1", 1ULL << 20, milliseconds(1), false, false, now);
  EXPECT_DOUBLE_EQ(m.rate("a:1"), 3 * kGiB);
  EXPECT_TRUE(m.healthy("a:1", now));
  EXPECT_DOUBLE_EQ(m.rate("b:1"), kGiB);  // unmeasured: the prior
}

// Other clients' transfers at a node's port are invisible to this one: a fetch that waited longer
// than its own bytes ahead explain teaches the node's wait, which every later TTR of that node
// (and the bound) adds.
TEST(RemoteTtr, TheWaitBehindOtherClientsIsLearnedPerNode) {
  RemoteTtrModel m(options());
  const TimePoint now{};
  m.started("a:1", 1ULL << 29);
  const Duration own = m.own_wait("a:1");  // 0.5 GiB of its own ahead at 1 GiB/s
  EXPECT_EQ(own, milliseconds(500));
  m.started("a:1", 1ULL << 28);
  // The first waited 100 ms (nothing of its own ahead), the second 800 ms (500 of them its own).
  m.finished("a:1", 1ULL << 29, milliseconds(500), true, false, now, milliseconds(100));
  m.finished("a:1", 1ULL << 28, milliseconds(250), true, false, now, milliseconds(800), own);
  EXPECT_EQ(m.wait("a:1"), milliseconds(200));  // 100, then 0.5 x 100 + 0.5 x 300
  EXPECT_EQ(m.ttr({{"a:1", 1ULL << 29}}, now),
            milliseconds(1) + milliseconds(200) + milliseconds(500));
  EXPECT_EQ(m.wait("b:1"), Duration::zero());  // another node's is its own
  EXPECT_GE(m.ttr_bound(1ULL << 29), *m.ttr({{"a:1", 1ULL << 29}}, now));
  // A caller that does not measure the wait, a miss and a failed node teach nothing of it; a
  // fetch that waited less than its own bytes ahead counts as no wait.
  for (int i = 0; i < 3; ++i) m.started("a:1", 1ULL << 20);
  m.finished("a:1", 1ULL << 20, milliseconds(1), true, false, now);
  m.finished("a:1", 1ULL << 20, milliseconds(1), false, false, now, seconds(5));
  m.finished("a:1", 0, milliseconds(1), false, true, now, seconds(5));
  EXPECT_EQ(m.wait("a:1"), milliseconds(200));
  m.finished("a:1", 1ULL << 20, milliseconds(1), true, false, now + seconds(1), milliseconds(10),
             own);
  EXPECT_EQ(m.wait("a:1"), milliseconds(100));
}

TEST(RemoteTtr, AFailedNodeHasNoFiniteTtrUntilItsHoldEnds) {
  RemoteTtrModel m(options());
  const TimePoint t0{};
  m.started("a:1", 100);
  m.finished("a:1", 100, milliseconds(500), false, true, t0);
  EXPECT_FALSE(m.healthy("a:1", t0 + milliseconds(999)));
  EXPECT_EQ(m.ttr({{"a:1", 100}, {"b:1", 100}}, t0 + milliseconds(999)), std::nullopt);
  EXPECT_TRUE(m.ttr({{"b:1", 100}}, t0).has_value());  // other nodes are not affected
  // After the hold the next fetch may try it; an answer clears the mark at once.
  EXPECT_TRUE(m.ttr({{"a:1", 100}}, t0 + seconds(1)).has_value());
  m.finished("a:1", 0, milliseconds(0), false, true, t0 + seconds(1));
  EXPECT_FALSE(m.healthy("a:1", t0 + seconds(1)));
  m.finished("a:1", 0, milliseconds(1), true, false, t0 + seconds(1));
  EXPECT_TRUE(m.healthy("a:1", t0 + seconds(1)));
}

}  // namespace
}  // namespace tempokv::remote
