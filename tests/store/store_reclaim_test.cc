// Capacity reclamation on real files, with a read of the reclaimed segment held in flight.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "ssd/fault_injecting_engine.h"
#include "store/format.h"
#include "store_test_util.h"

namespace tempokv::testing {
namespace {

StoreOptions reclaim_options(const std::string& dir) {
  StoreOptions o = small_options(dir);
  o.capacity_bytes = 3 * kMiB;  // three 1 MiB segments of three 300 KiB records each
  return o;
}

TEST(StoreReclaimTest, OldestSegmentIsReclaimedAndListenerToldOfEachObject) {
  TempDir dir;
  if (!dir.supports_direct()) GTEST_SKIP() << "no O_DIRECT in " << dir.path();
  StoreHarness h;
  ASSERT_TRUE(h.start(reclaim_options(dir.path())).is_ok());
  std::vector<Key> evicted;
  h.store->set_eviction_listener([&](const Key& k) { evicted.push_back(k); });
  for (uint64_t i = 0; i < 10; ++i) ASSERT_TRUE(h.put_seeded(i, 300 * kKiB).is_ok());
  run_until(h.ex, [&] { return evicted.size() == 3; });
  EXPECT_EQ(evicted, (std::vector<Key>{test_key(0), test_key(1), test_key(2)}));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/" + store::segment_file_name(1)));
  EXPECT_EQ(h.store->stats().disk_bytes, 3 * kMiB);
  ASSERT_TRUE(h.reopen().is_ok());  // the reclaimed objects stay gone
  EXPECT_FALSE(h.store->contains(test_key(0)));
  for (uint64_t i = 3; i < 10; ++i) EXPECT_TRUE(h.check_seeded(i, 300 * kKiB));
}

TEST(StoreReclaimTest, SegmentFileOutlivesItsReclamationUntilTheReadInFlightCompletes) {
  TempDir dir;
  if (!dir.supports_direct()) GTEST_SKIP() << "no O_DIRECT in " << dir.path();
  StoreHarness h;
  FaultInjectingEngine* faults = nullptr;
  ASSERT_TRUE(h.start_with_faults(reclaim_options(dir.path()), &faults).is_ok());
  for (uint64_t i = 0; i < 9; ++i) ASSERT_TRUE(h.put_seeded(i, 300 * kKiB).is_ok());

  faults->add_delay(std::chrono::milliseconds(300), FaultInjectingEngine::kReads);
  auto buf = AlignedBuffer::allocate(300 * kKiB);
  std::optional<Result<size_t>> got;
  h.store->get(test_key(0), buf->data(), buf->size(), [&](Result<size_t> r) { got = r; });
  faults->clear();
  ASSERT_TRUE(h.put_seeded(9, 300 * kKiB).is_ok());  // rolls to segment 4: reclaims segment 1

  std::string first = dir.path() + "/" + store::segment_file_name(1);
  ASSERT_FALSE(got.has_value()) << "the delayed read finished too early for this test";
  EXPECT_FALSE(h.store->contains(test_key(0)));
  EXPECT_EQ(h.store->stats().reclaimed_segments, 1u);
  EXPECT_TRUE(std::filesystem::exists(first)) << "deleted under a read in flight";
  ASSERT_TRUE(run_until(h.ex, [&] { return got.has_value(); }));
  ASSERT_TRUE(got->is_ok()) << got->status().to_string();
  auto want = payload(0, 300 * kKiB);
  EXPECT_EQ(std::memcmp(buf->data(), want.data(), want.size()), 0);
  EXPECT_FALSE(std::filesystem::exists(first));
}

TEST(StoreReclaimTest, PinnedSegmentIsKeptUntilUnpinned) {
  TempDir dir;
  if (!dir.supports_direct()) GTEST_SKIP() << "no O_DIRECT in " << dir.path();
  StoreHarness h;
  ASSERT_TRUE(h.start(reclaim_options(dir.path())).is_ok());
  for (uint64_t i = 0; i < 9; ++i) ASSERT_TRUE(h.put_seeded(i, 300 * kKiB).is_ok());
  uint32_t seg = h.store->lookup(test_key(0))->segment;
  std::string path = h.store->segment_path(seg);
  ASSERT_TRUE(h.store->pin_segment(seg).is_ok());
  ASSERT_TRUE(h.put_seeded(9, 300 * kKiB).is_ok());
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(h.store->pin_segment(seg).code(), StatusCode::kNotFound);  // no longer live
  h.store->unpin_segment(seg);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(StoreReclaimTest, ReclaimedSegmentLeavesItsNameAtOnceAndIsDeletedOffTheLoop) {
  TempDir dir;
  if (!dir.supports_direct()) GTEST_SKIP() << "no O_DIRECT in " << dir.path();
  StoreHarness h;
  ASSERT_TRUE(h.start(reclaim_options(dir.path())).is_ok());
  for (uint64_t i = 0; i < 10; ++i) ASSERT_TRUE(h.put_seeded(i, 300 * kKiB).is_ok());
  ASSERT_EQ(h.store->stats().reclaimed_segments, 1u);
  std::string first = dir.path() + "/" + store::segment_file_name(1);
  EXPECT_FALSE(std::filesystem::exists(first));
  bool gone = false;  // the unlinker thread deletes the renamed file soon
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = !std::filesystem::exists(first + ".reclaimed");
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << first << ".reclaimed was never deleted";
}

TEST(StoreReclaimTest, OpenDeletesAReclaimedSegmentACrashLeftBehind) {
  TempDir dir;
  if (!dir.supports_direct()) GTEST_SKIP() << "no O_DIRECT in " << dir.path();
  StoreHarness h;
  ASSERT_TRUE(h.start(reclaim_options(dir.path())).is_ok());
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(h.put_seeded(i, 300 * kKiB).is_ok());
  uint64_t disk_bytes = h.store->stats().disk_bytes;
  ASSERT_TRUE(h.close().is_ok());
  std::string leftover = dir.path() + "/" + store::segment_file_name(9) + ".reclaimed";
  {
    int fd = ::open(leftover.c_str(), O_CREAT | O_RDWR, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(fallocate(fd, 0, 0, 1 * kMiB), 0);
    ::close(fd);
  }
  ASSERT_TRUE(h.reopen().is_ok());
  EXPECT_FALSE(std::filesystem::exists(leftover));
  EXPECT_EQ(h.store->stats().disk_bytes, disk_bytes);
  EXPECT_TRUE(h.check_seeded(2, 300 * kKiB));
}

}  // namespace
}  // namespace tempokv::testing
