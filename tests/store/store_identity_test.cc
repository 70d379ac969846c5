// Object identity in the store: every object has a generation (its record's sequence); a put of
// the bytes already stored keeps it and writes nothing, a put of other bytes makes a new one; a
// checksum drop never hides an acknowledged put; and open() deletes nothing that holds data
// unless asked to (a lost header before records is quarantined, a capacity cut is refused).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "store/format.h"
#include "store_test_util.h"

namespace tempokv::testing {
namespace {

class StoreIdentityTest : public SmallStoreTest {
 protected:
  Status put_bytes(uint64_t key, uint64_t seed, size_t bytes) {
    auto p = payload(seed, bytes);
    return h_.put(test_key(key), p.data(), p.size());
  }
  // key's bytes equal payload(seed, bytes)
  ::testing::AssertionResult holds(uint64_t key, uint64_t seed, size_t bytes) {
    auto buf = AlignedBuffer::allocate(round_up(bytes, kBlockBytes));
    Result<size_t> n = h_.get(test_key(key), buf->data(), buf->size());
    if (!n.is_ok()) return ::testing::AssertionFailure() << n.status().to_string();
    auto want = payload(seed, bytes);
    if (*n != bytes || std::memcmp(buf->data(), want.data(), bytes) != 0) {
      return ::testing::AssertionFailure() << "key " << key << " does not hold seed " << seed;
    }
    return ::testing::AssertionSuccess();
  }
  uint64_t generation(uint64_t key) { return h_.store->lookup(test_key(key))->generation; }
};

TEST_F(StoreIdentityTest, EveryPutOfNewBytesGetsANewGeneration) {
  ASSERT_TRUE(put_bytes(1, 1, 8 * kKiB).is_ok());
  ASSERT_TRUE(put_bytes(2, 2, 8 * kKiB).is_ok());
  const uint64_t g1 = generation(1);
  EXPECT_NE(g1, 0u);
  EXPECT_NE(generation(2), g1);
  ASSERT_TRUE(put_bytes(1, 3, 8 * kKiB).is_ok());  // other bytes, same length
  EXPECT_GT(generation(1), g1);
  EXPECT_TRUE(holds(1, 3, 8 * kKiB));
  const uint64_t g1b = generation(1);
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_EQ(generation(1), g1b) << "the generation is the durable record's, across reopen";
}

// Small payloads are compared at put(); large ones (64 KiB and more) after the worker hashed them.
class StoreIdempotentPut : public StoreIdentityTest,
                           public ::testing::WithParamInterface<size_t> {};

TEST_P(StoreIdempotentPut, ARePutOfTheSameBytesKeepsTheGenerationAndWritesNothing) {
  const size_t bytes = GetParam();
  ASSERT_TRUE(put_bytes(1, 7, bytes).is_ok());
  const uint64_t g = generation(1);
  const StoreStats before = h_.store->stats();
  ASSERT_TRUE(put_bytes(1, 7, bytes).is_ok()) << "a retried put of the same bytes is a success";
  const StoreStats after = h_.store->stats();
  EXPECT_EQ(generation(1), g);
  EXPECT_EQ(after.unchanged_puts, before.unchanged_puts + 1);
  EXPECT_EQ(after.syncs, before.syncs) << "an unchanged put wrote a record";
  EXPECT_TRUE(holds(1, 7, bytes));
  ASSERT_TRUE(put_bytes(1, 8, bytes).is_ok());  // other bytes: the documented rule
  EXPECT_GT(generation(1), g);
  EXPECT_TRUE(holds(1, 8, bytes));
}

INSTANTIATE_TEST_SUITE_P(Sizes, StoreIdempotentPut, ::testing::Values(8 * kKiB, 300 * kKiB));

TEST_F(StoreIdentityTest, AChecksumDropNeverHidesAnAcknowledgedPutOfTheKey) {
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(put_bytes(i, i, 300 * kKiB).is_ok());
  ObjectInfo info = *h_.store->lookup(test_key(0));
  ASSERT_TRUE(h_.close().is_ok());
  flip_bytes(segment_file(info.segment), info.offset + 5);
  // The new put's hashing is held on the worker until the corrupt get has been dropped.
  std::atomic<bool> release{false};
  h_.options.on_io_thread_for_testing = [&](std::string_view what) {
    if (what == "prepare") {
      while (!release.load()) usleep(1000);
    }
  };
  ASSERT_TRUE(h_.reopen().is_ok());
  auto fresh = payload(100, 300 * kKiB);
  std::optional<Status> put_done;
  h_.store->put(test_key(0), {0, 256}, fresh.data(), fresh.size(),
                [&](Status st) { put_done = st; });
  auto buf = AlignedBuffer::allocate(300 * kKiB);
  EXPECT_EQ(h_.get(test_key(0), buf->data(), buf->size()).status().code(),
            StatusCode::kCorruption);
  release = true;
  ASSERT_TRUE(run_until(h_.ex, [&] { return put_done.has_value(); }));
  ASSERT_TRUE(put_done->is_ok()) << put_done->to_string();
  EXPECT_TRUE(holds(0, 100, 300 * kKiB)) << "the acknowledged put was lost to the drop";
  h_.options.on_io_thread_for_testing = nullptr;
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_TRUE(holds(0, 100, 300 * kKiB)) << "the acknowledged put is hidden after reopen";
}

TEST_F(StoreIdentityTest, ALostNewestSegmentHeaderBeforeRecordsIsQuarantinedNotDeleted) {
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(put_bytes(i, i, 300 * kKiB).is_ok());
  ASSERT_TRUE(h_.close().is_ok());
  const uint32_t newest = 2;  // three records fill a segment: key 3 is in segment 2
  ASSERT_EQ(segment_file_count(dir_.path()), 2u);
  const std::string path = segment_file(newest);
  const uint64_t bytes = std::filesystem::file_size(path);
  {
    int fd = ::open(path.c_str(), O_RDWR);
    std::vector<char> zero(kBlockBytes, 0);
    ASSERT_EQ(pwrite(fd, zero.data(), zero.size(), 0), static_cast<ssize_t>(zero.size()));
    ::close(fd);
  }
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_FALSE(std::filesystem::exists(path));
  ASSERT_TRUE(std::filesystem::exists(path + ".quarantine"))
      << "an acknowledged record was deleted";
  EXPECT_EQ(std::filesystem::file_size(path + ".quarantine"), bytes);
  EXPECT_EQ(h_.store->stats().quarantined_segments, 1u);
  EXPECT_TRUE(holds(0, 0, 300 * kKiB));
}

TEST_F(StoreIdentityTest, ACapacityCutIsRefusedEvenWhenTheOldestSegmentIsUnsealed) {
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(put_bytes(i, i, 300 * kKiB).is_ok());
  ASSERT_TRUE(h_.close().is_ok());
  // Segment 1 loses its seal (a torn tail long ago): unsealed and oldest.
  const std::string oldest = segment_file(1);
  {
    // The seal is the last record: 3 records of 4 KiB + 300 KiB after the header.
    const uint64_t seal_at = kBlockBytes + 3 * (kBlockBytes + 300 * kKiB);
    int fd = ::open(oldest.c_str(), O_RDWR);
    std::vector<char> zero(kBlockBytes, 0);
    ASSERT_EQ(pwrite(fd, zero.data(), zero.size(), seal_at), static_cast<ssize_t>(zero.size()));
    ::close(fd);
  }
  h_.options.capacity_bytes = 1 * kMiB;  // a cut: the store holds two segments
  Status st = h_.reopen();
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.to_string();
  EXPECT_TRUE(std::filesystem::exists(oldest)) << "open deleted a segment it was not asked to";
  h_.options.reclaim_at_open = true;
  ASSERT_TRUE(h_.reopen().is_ok());
  const StoreStats s = h_.store->stats();
  EXPECT_EQ(s.reclaimed_at_open_segments, 1u) << "an explicit reclaim says what it deleted";
  EXPECT_EQ(s.reclaimed_at_open_objects, 3u);
  EXPECT_TRUE(holds(3, 3, 300 * kKiB));
}

TEST_F(StoreIdentityTest, TheNewestSegmentRecordsTheCapacityItWasMadeUnder) {
  ASSERT_TRUE(put_bytes(1, 1, 8 * kKiB).is_ok());
  EXPECT_EQ(h_.store->recorded_capacity(), h_.options.capacity_bytes);
  h_.options.capacity_bytes = 96 * kMiB;
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_EQ(h_.store->recorded_capacity(), 64 * kMiB) << "read back from the newest header";
}

}  // namespace
}  // namespace tempokv::testing
