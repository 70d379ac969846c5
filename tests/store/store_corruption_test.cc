// Damage on disk: flipped payload and header bytes, truncated segments, zeroed (torn) payloads.
#include <gtest/gtest.h>
#include <unistd.h>

#include "store/format.h"
#include "store/scan.h"
#include "store_test_util.h"

namespace tempokv::testing {
namespace {

class StoreCorruptionTest : public SmallStoreTest {};

TEST_F(StoreCorruptionTest, FlippedPayloadByteMakesGetReturnCorruption) {
  ASSERT_TRUE(h_.put_seeded(1, 64 * kKiB).is_ok());
  ObjectInfo info = *h_.store->lookup(test_key(1));
  flip_bytes(segment_file(info.segment), info.offset + 1000);
  auto buf = AlignedBuffer::allocate(64 * kKiB);
  Result<size_t> r = h_.get(test_key(1), buf->data(), buf->size());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find("checksum"), std::string::npos);
  EXPECT_EQ(h_.store->stats().checksum_failures, 1u);
  ASSERT_TRUE(h_.close().is_ok());  // verify takes the lock a writer holds
  auto report = verify_store_dir(dir_.path());
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->corrupt, 1u);
  EXPECT_EQ(report->good, 0u);
}

TEST_F(StoreCorruptionTest, FlippedPayloadByteInSealedSegmentIsServedAsCorruptionAfterReopen) {
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(h_.put_seeded(i, 300 * kKiB).is_ok());  // seals 1
  ObjectInfo info = *h_.store->lookup(test_key(0));
  ASSERT_TRUE(h_.close().is_ok());
  flip_bytes(segment_file(info.segment), info.offset + 5);
  ASSERT_TRUE(h_.reopen().is_ok());  // a sealed segment's payloads are checked on get only
  auto buf = AlignedBuffer::allocate(300 * kKiB);
  Result<size_t> r = h_.get(test_key(0), buf->data(), buf->size());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_TRUE(h_.check_seeded(1, 300 * kKiB));
}

TEST_F(StoreCorruptionTest, FlippedPayloadByteInActiveSegmentIsSkippedAtOpen) {
  ASSERT_TRUE(h_.put_seeded(1, 64 * kKiB).is_ok());
  ASSERT_TRUE(h_.put_seeded(2, 64 * kKiB).is_ok());
  ObjectInfo info = *h_.store->lookup(test_key(1));
  ASSERT_TRUE(h_.close().is_ok());
  flip_bytes(segment_file(info.segment), info.offset + 7);
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_FALSE(h_.store->contains(test_key(1)));
  EXPECT_EQ(h_.store->stats().corrupt_records, 1u);
  EXPECT_TRUE(h_.check_seeded(2, 64 * kKiB));
}

TEST_F(StoreCorruptionTest, FlippedHeaderByteSkipsTheRecordAndCountsIt) {
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(h_.put_seeded(i, 20 * kKiB).is_ok());
  ObjectInfo info = *h_.store->lookup(test_key(1));
  ASSERT_TRUE(h_.close().is_ok());
  flip_bytes(segment_file(info.segment), info.offset - kBlockBytes + 40);  // its key field
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_FALSE(h_.store->contains(test_key(1)));
  EXPECT_EQ(h_.store->stats().corrupt_records, 1u);
  EXPECT_TRUE(h_.check_seeded(0, 20 * kKiB));
  EXPECT_TRUE(h_.check_seeded(2, 20 * kKiB));  // found again by resynchronizing
  ASSERT_TRUE(h_.close().is_ok());  // verify takes the lock a writer holds
  auto report = verify_store_dir(dir_.path());
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->good, 2u);
  EXPECT_EQ(report->corrupt, 1u);
}

TEST_F(StoreCorruptionTest, TruncatedSegmentDropsTheTornTail) {
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(h_.put_seeded(i, 40 * kKiB).is_ok());
  ObjectInfo last = *h_.store->lookup(test_key(2));
  ASSERT_TRUE(h_.close().is_ok());
  ASSERT_EQ(truncate(segment_file(last.segment).c_str(), static_cast<off_t>(last.offset + 8192)), 0);
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_FALSE(h_.store->contains(test_key(2)));
  EXPECT_EQ(h_.store->stats().torn_records, 1u);
  EXPECT_EQ(h_.store->stats().corrupt_records, 0u);
  EXPECT_TRUE(h_.check_seeded(1, 40 * kKiB));
  ASSERT_TRUE(h_.close().is_ok());  // verify takes the lock a writer holds
  auto report = verify_store_dir(dir_.path());
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->torn, 1u);
  EXPECT_EQ(report->corrupt, 0u);
}

TEST_F(StoreCorruptionTest, PayloadWithUnwrittenBlockInActiveSegmentIsTornNotCorrupt) {
  ASSERT_TRUE(h_.put_seeded(1, 40 * kKiB).is_ok());
  ASSERT_TRUE(h_.put_seeded(2, 40 * kKiB).is_ok());
  ObjectInfo info = *h_.store->lookup(test_key(2));
  ASSERT_TRUE(h_.close().is_ok());
  // What a crash leaves when the last blocks of a payload never reached the disk.
  int fd = ::open(segment_file(info.segment).c_str(), O_RDWR);
  std::vector<char> zeros(8192, 0);
  ASSERT_EQ(pwrite(fd, zeros.data(), zeros.size(), static_cast<off_t>(info.offset + 32 * kKiB)),
            8192);
  ::close(fd);
  auto report = verify_store_dir(dir_.path());
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->torn, 1u);
  EXPECT_EQ(report->corrupt, 0u);
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_FALSE(h_.store->contains(test_key(2)));
  EXPECT_TRUE(h_.check_seeded(1, 40 * kKiB));
}

// Zeros written over a wreck and over the free space (a segment copied by a tool that keeps no
// holes) are skipped a megabyte at a time, not a block at a time: every record after them is
// still found, and the segment stays writable.
TEST(StoreWrittenZerosTest, RecordsAfterMegabytesOfWrittenZerosAreFoundAndTheTailIsFreeSpace) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  if (!dir.supports_direct()) GTEST_SKIP() << dir.path() << " does not support O_DIRECT";
  StoreOptions o = small_options(dir.path());
  o.segment_bytes = 4 * kMiB;
  StoreHarness h;
  ASSERT_TRUE(h.start(o).is_ok());
  for (uint64_t i = 1; i <= 5; ++i) ASSERT_TRUE(h.put_seeded(i, 400 * kKiB).is_ok());
  ObjectInfo first = *h.store->lookup(test_key(2));
  ObjectInfo last = *h.store->lookup(test_key(5));
  ASSERT_EQ(first.segment, last.segment);
  auto end_of = [&](uint64_t i) {
    ObjectInfo info = *h.store->lookup(test_key(i));
    return info.offset + info.read_bytes();
  };
  const uint64_t wreck_end = end_of(4), tail = end_of(5);
  ASSERT_TRUE(h.close().is_ok());
  const std::string path = dir.path() + "/" + store::segment_file_name(first.segment);
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  auto zero = [&](uint64_t from, uint64_t to) {
    std::vector<char> zeros(to - from, 0);
    return pwrite(fd, zeros.data(), zeros.size(), static_cast<off_t>(from)) ==
           static_cast<ssize_t>(zeros.size());
  };
  // Records 2-4 (1.2 MiB with their headers) become written zeros, as does everything after 5.
  ASSERT_GT(wreck_end - (first.offset - kBlockBytes), 1 * kMiB);
  ASSERT_TRUE(zero(first.offset - kBlockBytes, wreck_end));
  ASSERT_TRUE(zero(tail, o.segment_bytes));
  ::close(fd);
  // About 3 MiB of written zeros: block by block they were ~750 reads (and as many seeks).
  auto scan = store::scan_segment(path, first.segment, store::PayloadCheck::kNever);
  ASSERT_TRUE(scan.is_ok());
  EXPECT_EQ(scan->records.size(), 2u);
  EXPECT_LT(scan->reads, 20u);
  auto report = verify_store_dir(dir.path());
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->good, 2u);
  ASSERT_TRUE(h.reopen().is_ok());
  EXPECT_TRUE(h.check_seeded(1, 400 * kKiB));
  EXPECT_TRUE(h.check_seeded(5, 400 * kKiB));
  for (uint64_t i = 2; i <= 4; ++i) EXPECT_FALSE(h.store->contains(test_key(i))) << i;
  ASSERT_TRUE(h.put_seeded(6, 400 * kKiB).is_ok());
  ASSERT_TRUE(h.reopen().is_ok());
  EXPECT_TRUE(h.check_seeded(6, 400 * kKiB));
  EXPECT_TRUE(h.check_seeded(5, 400 * kKiB));
}

}  // namespace
}  // namespace tempokv::testing
