// StagingProvider::commit_wait: how long a commit can wait for the reads ahead of a claim and
// still leave it ready when a commit now would. Each case checks the answer against the simulated
// device: the claim committed after the wait is ready exactly when the claim committed at once is
// (on a second, identical stack), or, where the answer is 0, a commit after the reads ahead would
// have been later.
#include <gtest/gtest.h>

#include <memory>
#include <optional>

#include "provider/sim_fixture.h"

namespace tempokv::testing {
namespace {

using std::chrono::milliseconds;

// A stack that has learned that four writes are in flight while it reads (one read beside four
// 64 MiB writes as fast as reads), with `writes` more objects put now to keep the store writing.
std::unique_ptr<SimStack> writing_stack(const SimStackOptions& o, uint64_t writes) {
  auto s = std::make_unique<SimStack>(o);
  for (uint64_t i : {101, 102, 103, 104}) {
    s->store->put(obj(i), {0, 256}, nullptr, kObj - 4096,
                  [](Status st) { EXPECT_TRUE(st.is_ok()); });
  }
  EXPECT_TRUE(s->commit(claim_of(9, {5})).is_ok());
  s->ex.run();
  EXPECT_TRUE(s->provider->release(9).is_ok());
  EXPECT_NEAR(s->provider->stats().writes_while_reading, 4.0, 1e-6);
  for (uint64_t i = 0; i < writes; ++i) {
    s->store->put(obj(200 + i), {0, 256}, nullptr, kObj - 4096,
                  [](Status st) { EXPECT_TRUE(st.is_ok()); });
  }
  return s;
}

// When `c` is ready, from the commit of `ahead` now, if committed after `wait` (0: at once): on
// SimStack(o), or on writing_stack(o, *writes) when `writes` is set.
Duration ready_after_wait(const SimStackOptions& o, const StagingClaim& ahead,
                          const StagingClaim& c, Duration wait,
                          std::optional<uint64_t> writes = std::nullopt) {
  std::unique_ptr<SimStack> s = writes ? writing_stack(o, *writes) : std::make_unique<SimStack>(o);
  const TimePoint start = s->ex.now();
  EXPECT_TRUE(s->commit(ahead).is_ok());
  s->ex.run_until(start + wait);
  EXPECT_TRUE(s->commit(c).is_ok());
  s->ex.run();
  return s->ready.at(c.id).first - start;
}

TEST(ProviderWait, NothingAheadMeansNoWait) {
  SimStack s;
  const StagingClaim c = claim_of(1, {1, 2});
  EXPECT_EQ(s.provider->commit_wait(c, s.provider->ttr(c)), Duration::zero());
}

TEST(ProviderWait, BehindReadsThatHoldEverySlotItWaitsForThemAndIsReadyAsSoon) {
  // Two slots, both taken by claim 1's reads: claim 2's reads would queue until they end.
  const SimStackOptions o{.max_reads_in_flight = 2};
  SimStack s(o);
  const StagingClaim first = claim_of(1, {1, 2}), c = claim_of(2, {3, 4});
  ASSERT_TRUE(s.commit(first).is_ok());
  const Duration ttr = s.provider->ttr(c);
  EXPECT_EQ(ttr, 4 * kObjTime);
  const Duration wait = s.provider->commit_wait(c, ttr);
  EXPECT_EQ(wait, 2 * kObjTime);
  EXPECT_EQ(ready_after_wait(o, first, c, wait), ready_after_wait(o, first, c, Duration::zero()));
}

TEST(ProviderWait, SharingTheDeviceWithReadsThatEndFirstItWaitsForThemAndIsReadyAsSoon) {
  // Four slots: claim 2's reads would start at once beside claim 1's and share the device. Claim
  // 1's reads end first, so the device moves all four reads' bytes by claim 2's TTR either way.
  const SimStackOptions o{.max_reads_in_flight = 4};
  SimStack s(o);
  const StagingClaim first = claim_of(1, {1, 2}), c = claim_of(2, {3, 4});
  ASSERT_TRUE(s.commit(first).is_ok());
  s.ex.run_until(s.ex.now() + milliseconds(25));  // claim 1's reads ahead by 25 ms
  const Duration ttr = s.provider->ttr(c);
  const Duration wait = s.provider->commit_wait(c, ttr);
  EXPECT_EQ(wait, 2 * kObjTime - milliseconds(25));
  // Both ways: ready when the device has moved the remaining 100 ms of claim 1 and 125 ms of its own.
  SimStack now_s(o), later_s(o);
  for (SimStack* x : {&now_s, &later_s}) {
    ASSERT_TRUE(x->commit(first).is_ok());
    x->ex.run_until(x->ex.now() + milliseconds(25));
  }
  ASSERT_TRUE(now_s.commit(c).is_ok());
  later_s.ex.run_until(later_s.ex.now() + wait);
  ASSERT_TRUE(later_s.commit(c).is_ok());
  now_s.ex.run();
  later_s.ex.run();
  EXPECT_EQ(now_s.ready_after(2), later_s.ready_after(2));
  EXPECT_EQ(now_s.ready_after(2), 4 * kObjTime);
}

TEST(ProviderWait, NoWaitWhenAReadAheadOutlastsIt) {
  // A small object (a third of the others) shares the device with claim 1's two reads and ends
  // first; the reads ahead end after it, so starting it after them would make it later.
  const SimStackOptions o{.max_reads_in_flight = 4, .small_every = 10};
  SimStack s(o);
  const StagingClaim first = claim_of(1, {1, 2});
  StagingClaim c = claim_of(2, {});
  c.objects.push_back({obj(10), obj_bytes(10, 10)});
  ASSERT_TRUE(s.commit(first).is_ok());
  const Duration ttr = s.provider->ttr(c);
  EXPECT_EQ(s.provider->commit_wait(c, ttr), Duration::zero());
  const Duration now_ready = ready_after_wait(o, first, c, Duration::zero());
  EXPECT_NEAR(now_ready.count(), ttr.count(), 1000);  // the device rounds each end up to a ns
  EXPECT_GT(ready_after_wait(o, first, c, 2 * kObjTime), now_ready);
}

TEST(ProviderWait, NoWaitWhenAReadAheadOutlastsItBesideTheLearnedWrites) {
  // The provider learned that four writes are in flight while it reads (one read beside four
  // 64 MiB writes), so it projects the small object beside claim 1's two reads and that
  // background: 7 x 20.8 ms, exactly the time the device needs for all three reads' bytes. That
  // time does not mean the small read ends last (claim 1's reads outlast it): the wait test must
  // ask the reads' least share of it, 1 / (1 + 4), and answers 0, not claim 1's 125 ms.
  const SimStackOptions o{.max_reads_in_flight = 4,
                          .calibration_weight = 1.0,
                          .small_every = 10,
                          .write_bytes_per_s = kRate,
                          .store_write_bytes_in_flight = 4 * kObj};
  std::unique_ptr<SimStack> s = writing_stack(o, 0);
  const StagingClaim first = claim_of(1, {1, 2});
  StagingClaim c = claim_of(2, {});
  c.objects.push_back({obj(10), obj_bytes(10, 10)});
  ASSERT_TRUE(s->commit(first).is_ok());
  const Duration ttr = s->provider->ttr(c);
  // (its bytes read rounded up to whole 4 KiB blocks: 18 us more)
  EXPECT_NEAR(ttr.count(), (7 * kObjTime / 3).count(), 20'000);
  EXPECT_EQ(s->provider->commit_wait(c, ttr), Duration::zero());
  // On the device (no writes now), starting it after claim 1's reads would make it later.
  EXPECT_GT(ready_after_wait(o, first, c, 2 * kObjTime),
            ready_after_wait(o, first, c, Duration::zero()));
}

TEST(ProviderWait, BehindAReadThatOutlastsItItWaitsOnlyUntilASlotFrees) {
  // Two slots: claim 1's large read and small read. Claim 2's small read would queue until
  // claim 1's small read ends (2/3 x 62.5 ms) and then end before claim 1's large one, so the
  // reads-end-last wait does not hold; the slot's does. Committed when the slot frees it is ready
  // as soon as committed at once; committed later, later.
  const SimStackOptions o{.max_reads_in_flight = 2, .small_every = 10};
  StagingClaim first = claim_of(1, {1}), c = claim_of(2, {});
  first.objects.push_back({obj(10), obj_bytes(10, 10)});
  c.objects.push_back({obj(20), obj_bytes(20, 10)});
  SimStack s(o);
  ASSERT_TRUE(s.commit(first).is_ok());
  const Duration wait = s.provider->commit_wait(c, s.provider->ttr(c));
  // (the small objects' bytes read rounded up to whole 4 KiB blocks)
  EXPECT_NEAR(wait.count(), (2 * kObjTime / 3).count(), 20'000);
  const Duration at_once = ready_after_wait(o, first, c, Duration::zero());
  EXPECT_EQ(ready_after_wait(o, first, c, wait), at_once);
  EXPECT_GT(ready_after_wait(o, first, c, wait + milliseconds(5)), at_once);
}

TEST(ProviderWait, BehindReadsThatHoldEverySlotBesideTheLearnedWritesItWaitsUntilASlotCanFree) {
  // Four slots, all taken by claim 1's reads, beside four writes at a time: claim 2's reads would
  // queue until claim 1's end, 8 x 62.5 ms later (each of eight requests at an eighth of the rate).
  // The reads' bytes alone do not account for its TTR (the background's share is not known to be
  // that small), so it waits only for the earliest a slot can free: claim 1's reads alone at the
  // whole rate, 4 x 62.5 ms. Committed then, or when the slot does free, it is ready exactly when
  // it would be if committed at once; committed later, it is later.
  const SimStackOptions o{.max_reads_in_flight = 4,
                          .calibration_weight = 1.0,
                          .write_bytes_per_s = kRate,
                          .store_write_bytes_in_flight = 4 * kObj};
  const StagingClaim first = claim_of(1, {1, 2, 3, 4}), c = claim_of(2, {5, 6});
  std::unique_ptr<SimStack> s = writing_stack(o, 16);
  ASSERT_TRUE(s->commit(first).is_ok());
  const Duration wait = s->provider->commit_wait(c, s->provider->ttr(c));
  EXPECT_NEAR(wait.count(), (4 * kObjTime).count(), 1000);
  const Duration at_once = ready_after_wait(o, first, c, Duration::zero(), 16);
  EXPECT_EQ(ready_after_wait(o, first, c, wait, 16), at_once);
  EXPECT_GT(at_once, 8 * kObjTime + 2 * kObjTime);  // then its two reads, beside the writes
  EXPECT_EQ(ready_after_wait(o, first, c, 8 * kObjTime, 16), at_once);
  EXPECT_GT(ready_after_wait(o, first, c, 8 * kObjTime + milliseconds(10), 16), at_once);
}

TEST(ProviderWait, TheStoresWritesAreNotWaitedFor) {
  // A 64 MiB write in flight (as fast as reads here) is ahead of every read in the TTR, but the
  // wait covers only claim 1's reads: a write issued during the wait would share the device with
  // claim 2's reads as it would if claim 2 had committed at once.
  const SimStackOptions o{.max_reads_in_flight = 2, .write_bytes_per_s = kRate};
  SimStack s(o);
  ASSERT_TRUE(s.commit(claim_of(1, {1, 2})).is_ok());
  s.store->put(obj(101), {0, 256}, nullptr, kObj - 4096, [](Status st) { EXPECT_TRUE(st.is_ok()); });
  const StagingClaim c = claim_of(2, {3, 4});
  const Duration ttr = s.provider->ttr(c);
  EXPECT_EQ(ttr, 5 * kObjTime);  // the write, claim 1's reads, then its own
  EXPECT_EQ(s.provider->commit_wait(c, ttr), 2 * kObjTime);
}

TEST(ProviderWait, AClaimWhoseObjectsAreResidentOrCoveredWaitsOnlyForTheReadsItNeeds) {
  // Claim 2 needs only objects claim 1 is reading: nothing of its own to read. The reads ahead
  // are exactly what it waits for; committed after them it is ready at once.
  const SimStackOptions o{.max_reads_in_flight = 2};
  SimStack s(o);
  ASSERT_TRUE(s.commit(claim_of(1, {1, 2})).is_ok());
  const StagingClaim c = claim_of(2, {1, 2});
  const Duration ttr = s.provider->ttr(c);
  EXPECT_EQ(ttr, 2 * kObjTime);
  EXPECT_EQ(s.provider->commit_wait(c, ttr), 2 * kObjTime);
}

}  // namespace
}  // namespace tempokv::testing
