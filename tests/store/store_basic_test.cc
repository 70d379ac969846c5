// Round trips, reopen, replacement, tombstones, sealing and concurrency on real files.
#include <gtest/gtest.h>

#include <filesystem>

#include "store/format.h"
#include "store_test_util.h"

namespace tempokv::testing {
namespace {

class StoreBasicTest : public SmallStoreTest {};

TEST_F(StoreBasicTest, AlignedPayloadRoundTrips) {
  auto src = AlignedBuffer::allocate(300 * kKiB + 5);  // zero-copy body + bounced tail
  ASSERT_TRUE(src.is_ok());
  fill_payload(1, src->data(), src->size());
  ASSERT_TRUE(h_.put(test_key(1), src->data(), src->size()).is_ok());
  auto dst = AlignedBuffer::allocate(round_up(src->size(), kBlockBytes));
  Result<size_t> n = h_.get(test_key(1), dst->data(), dst->size());
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_EQ(*n, src->size());
  EXPECT_EQ(std::memcmp(dst->data(), src->data(), src->size()), 0);
}

TEST_F(StoreBasicTest, UnalignedPayloadRoundTrips) {
  std::vector<uint8_t> raw(100 * kKiB + 3);
  fill_payload(2, raw.data() + 1, raw.size() - 1);
  ASSERT_TRUE(h_.put(test_key(2), raw.data() + 1, raw.size() - 1).is_ok());
  auto dst = AlignedBuffer::allocate(round_up(raw.size(), kBlockBytes));
  Result<size_t> n = h_.get(test_key(2), dst->data(), dst->size());
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_EQ(std::memcmp(dst->data(), raw.data() + 1, raw.size() - 1), 0);
}

TEST_F(StoreBasicTest, ReopenAfterCleanCloseKeepsEveryObject) {
  for (uint64_t i = 0; i < 10; ++i) ASSERT_TRUE(h_.put_seeded(i, 10 * kKiB + i).is_ok());
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_EQ(h_.store->stats().objects, 10u);
  for (uint64_t i = 0; i < 10; ++i) EXPECT_TRUE(h_.check_seeded(i, 10 * kKiB + i));
  auto info = h_.store->lookup(test_key(3));
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->tokens, (TokenRange{768, 1024}));
  EXPECT_EQ(info->payload_bytes, 10 * kKiB + 3);
}

TEST_F(StoreBasicTest, PutsAfterReopenAppendToTheCleanTail) {
  ASSERT_TRUE(h_.put_seeded(1, 8 * kKiB).is_ok());
  ASSERT_TRUE(h_.reopen().is_ok());
  ASSERT_TRUE(h_.put_seeded(2, 8 * kKiB).is_ok());
  EXPECT_EQ(h_.store->lookup(test_key(1))->segment, h_.store->lookup(test_key(2))->segment);
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_TRUE(h_.check_seeded(1, 8 * kKiB));
  EXPECT_TRUE(h_.check_seeded(2, 8 * kKiB));
}

TEST_F(StoreBasicTest, LaterPutReplacesEarlierOneAcrossReopen) {
  ASSERT_TRUE(h_.put(test_key(5), payload(100, 5000).data(), 5000).is_ok());
  ASSERT_TRUE(h_.put_seeded(5, 7000).is_ok());
  EXPECT_TRUE(h_.check_seeded(5, 7000));
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_EQ(h_.store->stats().objects, 1u);
  EXPECT_TRUE(h_.check_seeded(5, 7000));
}

TEST_F(StoreBasicTest, RemoveIsDurableAcrossReopen) {
  ASSERT_TRUE(h_.put_seeded(1, 4096).is_ok());
  ASSERT_TRUE(h_.put_seeded(2, 4096).is_ok());
  ASSERT_TRUE(h_.remove(test_key(1)).is_ok());
  EXPECT_FALSE(h_.store->contains(test_key(1)));
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_FALSE(h_.store->contains(test_key(1)));
  EXPECT_TRUE(h_.check_seeded(2, 4096));
  ASSERT_TRUE(h_.close().is_ok());  // verify takes the lock a writer holds
  auto report = verify_store_dir(dir_.path());
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->good, 2u);
  EXPECT_EQ(report->tombstones, 1u);
}

TEST_F(StoreBasicTest, FullSegmentsAreSealedAndIndexedFromHeadersAtOpen) {
  // 1 MiB segments hold three 300 KiB records; ten need four segments.
  for (uint64_t i = 0; i < 10; ++i) ASSERT_TRUE(h_.put_seeded(i, 300 * kKiB).is_ok());
  EXPECT_EQ(h_.store->stats().segments, 4u);
  ASSERT_TRUE(h_.reopen().is_ok());
  for (uint64_t i = 0; i < 10; ++i) EXPECT_TRUE(h_.check_seeded(i, 300 * kKiB));
  ASSERT_TRUE(h_.close().is_ok());  // verify takes the lock a writer holds
  auto scan_first = verify_store_dir(dir_.path());
  ASSERT_TRUE(scan_first.is_ok());
  EXPECT_EQ(scan_first->good, 10u);
  EXPECT_EQ(scan_first->segments, 4u);
  EXPECT_EQ(scan_first->corrupt + scan_first->torn, 0u);
}

TEST_F(StoreBasicTest, ListReportsEveryObjectWithTokensBytesAndSegment) {
  ASSERT_TRUE(h_.put_seeded(1, 5000).is_ok());
  ASSERT_TRUE(h_.put_seeded(2, 9000).is_ok());
  auto objects = h_.store->list();
  ASSERT_EQ(objects.size(), 2u);
  EXPECT_EQ(objects[0].key, test_key(1));
  EXPECT_EQ(objects[0].payload_bytes, 5000u);
  EXPECT_EQ(objects[0].read_bytes(), 8192u);
  EXPECT_EQ(objects[1].tokens, (TokenRange{512, 768}));
  EXPECT_EQ(objects[0].offset % kBlockBytes, 0u);
  EXPECT_EQ(objects[0].segment, objects[1].segment);
}

TEST_F(StoreBasicTest, ConcurrentPutsAndGetsOfManyObjectsAllSucceed) {
  constexpr int kObjects = 64;
  std::vector<std::vector<uint8_t>> data;
  for (int i = 0; i < kObjects; ++i) data.push_back(payload(i, 20 * kKiB + 100 * i));
  int done = 0, failed = 0;
  for (int i = 0; i < kObjects; ++i) {
    h_.store->put(test_key(i), {0, 1}, data[i].data(), data[i].size(), [&](Status st) {
      ++done;
      failed += !st.is_ok();
    });
  }
  ASSERT_TRUE(run_until(h_.ex, [&] { return done == kObjects; }));
  EXPECT_EQ(failed, 0);
  EXPECT_LT(h_.store->stats().syncs, static_cast<uint64_t>(kObjects));  // group commit shared
  std::vector<AlignedBuffer> bufs;
  done = 0;
  for (int i = 0; i < kObjects; ++i) {
    bufs.push_back(std::move(AlignedBuffer::allocate(round_up(data[i].size(), kBlockBytes)).value()));
    h_.store->get(test_key(i), bufs[i].data(), bufs[i].size(), [&, i](Result<size_t> r) {
      ++done;
      failed += !r.is_ok() || std::memcmp(bufs[i].data(), data[i].data(), data[i].size()) != 0;
    });
  }
  ASSERT_TRUE(run_until(h_.ex, [&] { return done == kObjects; }));
  EXPECT_EQ(failed, 0);
}

TEST_F(StoreBasicTest, SecondOpenOfTheSameDirectoryIsRefused) {
  // flock is per open file description, so a second open in this process conflicts as well.
  auto second = Store::open(h_.ex, *h_.engine, h_.options);
  ASSERT_FALSE(second.is_ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
}

TEST(StoreEngineTest, ThreadPoolEngineBufferedRoundTrips) {
  TempDir dir;
  StoreHarness h;
  ASSERT_TRUE(h.start(small_options(dir.path()), SsdEngineKind::kThreadPool, false).is_ok());
  ASSERT_TRUE(h.put_seeded(1, 70 * kKiB + 1).is_ok());
  ASSERT_TRUE(h.reopen().is_ok());
  EXPECT_TRUE(h.check_seeded(1, 70 * kKiB + 1));
}

}  // namespace
}  // namespace tempokv::testing
