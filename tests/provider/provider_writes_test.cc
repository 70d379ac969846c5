// The store's writes share the SSD with staging reads (store.h's write listener): the provider's
// TTR adds the device time of the writes already issued, expects the writes it learned keep coming
// while reads are in flight, and its rate is calibrated over reads and writes together, so a
// burst of writes neither hides from the TTR nor reads as a slow device.
#include <gtest/gtest.h>

#include <functional>

#include "provider/sim_fixture.h"

namespace tempokv::testing {
namespace {

using std::chrono::milliseconds;

// A record is its 4 KiB header and the payload: this payload makes a 64 MiB write.
constexpr uint64_t kPayload = kObj - 4096;

// A store that lets two such writes reach the device at once (its default holds the second back).
constexpr uint64_t kTwoWrites = 2 * kObj;

// Two 64 MiB writes reach the device (as fast as reads here) just before a claim of one object
// is committed: the three share the device, so the read ends at 3 × 62.5 ms, not 62.5 ms.
void two_writes(SimStack& s) {
  for (uint64_t i : {101, 102}) {
    s.store->put(obj(i), {0, 256}, nullptr, kPayload, [](Status st) { EXPECT_TRUE(st.is_ok()); });
  }
}

TEST(ProviderWrites, TtrIncludesTheWritesTheStoreHasIssued) {
  SimStack s({.write_bytes_per_s = kRate, .store_write_bytes_in_flight = kTwoWrites});
  two_writes(s);
  const StagingClaim c = claim_of(1, {1});
  // The writes' device time (125 ms) before the claim's own read (62.5 ms).
  EXPECT_EQ(s.provider->ttr(c), 3 * kObjTime);
  EXPECT_EQ(s.provider->ttr_reference(c), 3 * kObjTime);
  ASSERT_EQ(*s.commit(c), CommitState::kStaging);
  s.ex.run();
  // Processor sharing among the read and both writes ends all three at 187.5 ms.
  EXPECT_EQ(s.ready_after(1), 3 * kObjTime);
}

// The store's default sends one 64 MiB write at a time and none more while a read is in flight:
// the read shares the device with the first write only, and the TTR knows it.
TEST(ProviderWrites, TheStoreHoldsTheSecondWriteBackWhileTheClaimReads) {
  SimStack s({.write_bytes_per_s = kRate});
  two_writes(s);
  const StagingClaim c = claim_of(1, {1});
  EXPECT_EQ(s.provider->ttr(c), 2 * kObjTime);
  ASSERT_EQ(*s.commit(c), CommitState::kStaging);
  s.ex.run();
  EXPECT_EQ(s.ready_after(1), 2 * kObjTime);
}

TEST(ProviderWrites, WithoutWriteCostTheTtrMissesTheWrites) {
  SimStack s({.write_bytes_per_s = kRate, .write_cost = 0.0, .store_write_bytes_in_flight = kTwoWrites});
  two_writes(s);
  const StagingClaim c = claim_of(1, {1});
  EXPECT_EQ(s.provider->ttr(c), kObjTime);
  ASSERT_EQ(*s.commit(c), CommitState::kStaging);
  s.ex.run();
  EXPECT_EQ(s.ready_after(1), 3 * kObjTime);  // 125 ms later than projected
}

TEST(ProviderWrites, TheTtrFallsAsTheWritesComplete) {
  SimStack s({.write_bytes_per_s = kRate, .store_write_bytes_in_flight = kTwoWrites});
  two_writes(s);
  s.ex.run();  // the writes are done
  EXPECT_EQ(s.provider->ttr(claim_of(1, {1})), kObjTime);
}

TEST(ProviderWrites, ReadsSharingTheDeviceWithWritesDoNotCalibrateASlowerRate) {
  for (double cost : {1.0, 0.0}) {
    SimStack s({.calibration_weight = 1.0,
                 .write_bytes_per_s = kRate,
                 .write_cost = cost,
                 .store_write_bytes_in_flight = kTwoWrites});
    two_writes(s);
    ASSERT_EQ(*s.commit(claim_of(1, {1})), CommitState::kStaging);
    s.ex.run();
    const double rate = s.provider->stats().read_bytes_per_s;
    if (cost > 0) {
      // Reads and writes together moved the device's full rate.
      EXPECT_DOUBLE_EQ(rate, kRate) << "cost " << cost;
    } else {
      // Reads alone: one read's bytes over the 187.5 ms it was in flight.
      EXPECT_DOUBLE_EQ(rate, kRate / 3) << "cost " << cost;
    }
  }
}

// Told that writes cost what reads do, on a device that writes at half its read rate: a read
// sharing the device with two writes teaches the provider both rates (each kind calibrated over
// its share of the device time) and that two writes are in flight while it reads. The next TTR
// behind two writes puts their time ahead at the learned cost (2 x 2 x 62.5 ms; 2 x 62.5 with the
// told one) and shares the device with the two writes it learned to expect (3 x 62.5 ms for its
// read): conservative when no write follows, as here (the read is served in 3 x 62.5 ms).
TEST(ProviderWrites, TheWriteCostIsLearnedFromCompletions) {
  SimStack s({.calibration_weight = 1.0,
              .write_bytes_per_s = kRate / 2,
              .write_cost = 1.0,
              .store_write_bytes_in_flight = kTwoWrites});
  const StagingClaim c = claim_of(1, {1});
  two_writes(s);
  EXPECT_EQ(s.provider->ttr(c), 3 * kObjTime);  // the told cost: 2 x 62.5 ms of writes
  ASSERT_EQ(*s.commit(c), CommitState::kStaging);
  s.ex.run();
  // Sharing the device three ways, the read ends at 187.5 ms; the writes at 312.5.
  EXPECT_EQ(s.ready_after(1), 3 * kObjTime);
  EXPECT_NEAR(s.provider->stats().read_bytes_per_s / kRate, 1.0, 1e-6);
  EXPECT_NEAR(s.provider->stats().write_cost, 2.0, 1e-6);
  EXPECT_NEAR(s.provider->stats().writes_while_reading, 2.0, 1e-6);
  ASSERT_TRUE(s.provider->release(1).is_ok());
  for (uint64_t i : {103, 104}) {
    s.store->put(obj(i), {0, 256}, nullptr, kPayload, [](Status st) { EXPECT_TRUE(st.is_ok()); });
  }
  EXPECT_EQ(s.provider->ttr(claim_of(2, {2})), 7 * kObjTime);
}

// A writer that keeps one write going (the next put as the last one completes, as an engine's
// produced KV keeps coming): the store sends it to the device while claims read, so every read
// shares the device with writes it did not see at its commit. Once a claim has read beside the
// stream, the provider expects one write throughout: the next claim's four reads (two at a time,
// the stack's max_reads_in_flight) are projected as three requests sharing the device, 2 x 187.5
// ms, after the write in flight (62.5 ms, counted in full: the stream's first write is counted
// twice). They are served in 375 ms. Without the learned background the projection was early
// (the four reads alone and the write in flight: 312.5 ms).
TEST(ProviderWrites, WritesIssuedAfterTheCommitAreExpectedFromTheLearnedBackground) {
  SimStack s({.calibration_weight = 1.0, .write_bytes_per_s = kRate});
  uint64_t next = 200;
  std::function<void()> put_next = [&] {
    if (next == 240) return;
    s.store->put(obj(next++), {0, 256}, nullptr, kPayload, [&](Status st) {
      EXPECT_TRUE(st.is_ok());
      put_next();
    });
  };
  put_next();
  ASSERT_EQ(*s.commit(claim_of(1, {1, 2, 3, 4})), CommitState::kStaging);
  while (s.ready.count(1) == 0) ASSERT_TRUE(s.ex.step());
  EXPECT_NEAR(s.provider->stats().writes_while_reading, 1.0, 1e-6);
  ASSERT_TRUE(s.provider->release(1).is_ok());
  const StagingClaim c2 = claim_of(2, {5, 6, 7, 8});
  EXPECT_EQ(s.provider->ttr(c2), 7 * kObjTime);
  s.t0 = s.ex.now();
  ASSERT_EQ(*s.commit(c2), CommitState::kStaging);
  while (s.ready.count(2) == 0) ASSERT_TRUE(s.ex.step());
  EXPECT_EQ(s.ready_after(2), 6 * kObjTime);
}

}  // namespace
}  // namespace tempokv::testing
