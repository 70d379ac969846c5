// Damage found after open: a payload that fails its checksum on read leaves the index for good
// (a tombstone), a segment whose header is corrupt is quarantined and still counts against
// capacity, and a seal whose record count disagrees with the log is not trusted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "store/format.h"
#include "store_test_util.h"

namespace tempokv::testing {
namespace {

class StoreDamageTest : public SmallStoreTest {
 protected:
  Result<size_t> get(uint64_t i, size_t bytes) {
    auto buf = AlignedBuffer::allocate(round_up(bytes, kBlockBytes));
    return h_.get(test_key(i), buf->data(), buf->size());
  }
};

TEST_F(StoreDamageTest, PayloadFailingItsChecksumLeavesTheIndexAcrossReopen) {
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(h_.put_seeded(i, 300 * kKiB).is_ok());  // seals 1
  ObjectInfo info = *h_.store->lookup(test_key(0));
  ASSERT_TRUE(h_.close().is_ok());
  flip_bytes(segment_file(info.segment), info.offset + 5);
  ASSERT_TRUE(h_.reopen().is_ok());  // a sealed segment's payloads are checked on get only
  ASSERT_TRUE(h_.store->contains(test_key(0)));
  EXPECT_EQ(get(0, 300 * kKiB).status().code(), StatusCode::kCorruption);
  EXPECT_FALSE(h_.store->contains(test_key(0))) << "a poisoned record stays claimable";
  EXPECT_EQ(h_.store->stats().dropped_records, 1u);
  EXPECT_EQ(get(0, 300 * kKiB).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(run_until(h_.ex, [&] { return h_.store->stats().removes == 1; }))
      << "the tombstone never became durable";
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_FALSE(h_.store->contains(test_key(0))) << "the next open served it again";
  EXPECT_TRUE(h_.check_seeded(1, 300 * kKiB));
  ASSERT_TRUE(h_.put_seeded(0, 300 * kKiB).is_ok());  // the runtime recomputes and puts again
  EXPECT_TRUE(h_.check_seeded(0, 300 * kKiB));
}

TEST_F(StoreDamageTest, CorruptReadInAReadOnlyStoreDropsTheObjectInMemoryOnly) {
  ASSERT_TRUE(h_.put_seeded(1, 64 * kKiB).is_ok());
  ObjectInfo info = *h_.store->lookup(test_key(1));
  ASSERT_TRUE(h_.close().is_ok());
  h_.options.read_only = true;
  ASSERT_TRUE(h_.reopen().is_ok());
  flip_bytes(segment_file(info.segment), info.offset + 100);
  EXPECT_EQ(get(1, 64 * kKiB).status().code(), StatusCode::kCorruption);
  EXPECT_FALSE(h_.store->contains(test_key(1)));
  EXPECT_EQ(h_.store->stats().dropped_records, 1u);
  EXPECT_EQ(h_.store->stats().removes, 0u);
}

TEST_F(StoreDamageTest, SegmentWithCorruptHeaderIsQuarantinedAndCounted) {
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(h_.put_seeded(i, 300 * kKiB).is_ok());
  ASSERT_TRUE(h_.close().is_ok());
  flip_bytes(segment_file(1), 20);  // the segment id field of segment 1's header
  ASSERT_TRUE(h_.reopen().is_ok());
  std::string quarantined = segment_file(1) + ".quarantine";
  EXPECT_FALSE(std::filesystem::exists(segment_file(1)));
  EXPECT_TRUE(std::filesystem::exists(quarantined));
  StoreStats s = h_.store->stats();
  EXPECT_EQ(s.quarantined_segments, 1u);
  EXPECT_EQ(s.quarantined_bytes, 1 * kMiB);
  EXPECT_EQ(s.disk_bytes, 2 * kMiB) << "quarantined bytes must count against capacity";
  EXPECT_FALSE(h_.store->contains(test_key(0)));
  EXPECT_TRUE(h_.check_seeded(3, 300 * kKiB));
  ASSERT_TRUE(h_.reopen().is_ok());  // found again as a quarantined file
  EXPECT_EQ(h_.store->stats().quarantined_bytes, 1 * kMiB);
  EXPECT_EQ(h_.store->stats().disk_bytes, 2 * kMiB);
}

TEST_F(StoreDamageTest, QuarantinedSegmentIsReclaimedFirst) {
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(h_.put_seeded(i, 300 * kKiB).is_ok());
  ASSERT_TRUE(h_.close().is_ok());
  flip_bytes(segment_file(1), 20);
  h_.options.capacity_bytes = 3 * kMiB;
  ASSERT_TRUE(h_.reopen().is_ok());
  for (uint64_t i = 4; i < 10; ++i) ASSERT_TRUE(h_.put_seeded(i, 300 * kKiB).is_ok());
  EXPECT_FALSE(std::filesystem::exists(segment_file(1) + ".quarantine"));
  StoreStats s = h_.store->stats();
  EXPECT_EQ(s.quarantined_bytes, 0u);
  EXPECT_LE(s.disk_bytes, 3 * kMiB);
  EXPECT_TRUE(h_.check_seeded(3, 300 * kKiB)) << "a live segment went before the quarantined one";
}

TEST_F(StoreDamageTest, SealWhoseRecordCountDisagreesIsNotTrusted) {
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(h_.put_seeded(i, 300 * kKiB).is_ok());  // seals 1
  ObjectInfo first = *h_.store->lookup(test_key(0));
  ASSERT_EQ(first.segment, 1u);
  ASSERT_TRUE(h_.close().is_ok());
  // A header that passes its own checksum but claims a payload swallowing the next record.
  std::string path = segment_file(1);
  int fd = ::open(path.c_str(), O_RDWR);
  alignas(4096) std::byte block[store::kHeaderBytes];
  off_t at = static_cast<off_t>(first.offset - kBlockBytes);
  ASSERT_EQ(pread(fd, block, sizeof block, at), static_cast<ssize_t>(sizeof block));
  auto d = store::decode_record_header(std::span<const std::byte, store::kHeaderBytes>(block));
  ASSERT_EQ(d.defect, store::HeaderDefect::kNone);
  d.header.payload_bytes += d.header.record_bytes();
  store::encode_record_header(d.header, std::span<std::byte, store::kHeaderBytes>(block));
  ASSERT_EQ(pwrite(fd, block, sizeof block, at), static_cast<ssize_t>(sizeof block));
  fdatasync(fd);
  ::close(fd);
  auto report = verify_store_dir(dir_.path());
  ASSERT_TRUE(report.is_ok());
  EXPECT_GE(report->corrupt, 1u);
  bool named = false;
  for (const auto& p : report->problems) named = named || p.find("seal") != std::string::npos;
  EXPECT_TRUE(named) << "verify does not say the seal's count disagrees";
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_GE(h_.store->stats().corrupt_records, 1u);
  EXPECT_FALSE(h_.store->contains(test_key(0))) << "the forged record was indexed";
  EXPECT_TRUE(h_.check_seeded(2, 300 * kKiB));
}

}  // namespace
}  // namespace tempokv::testing
