// Work that the store does off the control loop: creating the next segment (made ahead as a spare,
// renamed into place when the active one fills) and preparing large puts (checksum, copy of an
// unaligned payload). Each test holds that work up on the store's own thread and shows that the
// loop keeps serving meanwhile.
#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>

#include "executor/work_gate.h"
#include "store/store_test_util.h"

namespace tempokv::testing {
namespace {

class StoreRollTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    if (!dir_.supports_direct()) GTEST_SKIP() << dir_.path() << " does not support O_DIRECT";
    StoreOptions o = small_options(dir_.path());
    o.on_io_thread_for_testing = [this](std::string_view what) { gate_.arrive(what); };
    ASSERT_TRUE(h_.start(o).is_ok());
  }
  bool run_ticking(const std::function<bool()>& pred) { return testing::run_ticking(h_.ex, pred); }
  size_t spare_files() const {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
      n += e.path().filename().string().ends_with(".next");
    }
    return n;
  }
  TempDir dir_;
  Gate gate_;  // before h_: the store's threads may still call it while h_ closes
  StoreHarness h_;
};

TEST_F(StoreRollTest, LoopServesWhileTheFirstSegmentIsCreated) {
  gate_.hold("create");
  auto p = payload(1, 300 * kKiB);
  std::optional<Status> put;
  h_.store->put(test_key(1), {0, 256}, p.data(), p.size(), [&](Status st) { put = st; });
  ASSERT_TRUE(run_ticking([&] { return gate_.someone_waiting(); }));
  // The put waits for its segment; the loop runs timers meanwhile.
  int served = 0;
  std::function<void()> tick = [&] {
    if (++served < 20) h_.ex.after(std::chrono::milliseconds(1), tick);
  };
  h_.ex.after(std::chrono::milliseconds(1), tick);
  ASSERT_TRUE(run_until(h_.ex, [&] { return served >= 20; }));
  EXPECT_FALSE(put.has_value()) << "the put finished while its segment was still being created";
  gate_.open();
  ASSERT_TRUE(run_until(h_.ex, [&] { return put.has_value(); }));
  EXPECT_TRUE(put->is_ok()) << put->to_string();
  EXPECT_TRUE(h_.check_seeded(1, 300 * kKiB));
}

TEST_F(StoreRollTest, EveryRollAfterTheFirstTakesTheSpareMadeAhead) {
  for (uint64_t i = 0; i < 12; ++i) ASSERT_TRUE(h_.put_seeded(i, 300 * kKiB).is_ok());
  // 4 segments of 3 records: the first created when needed, each later one a spare renamed into
  // place, and one more spare made after the fourth was installed.
  ASSERT_TRUE(run_ticking([&] { return spare_files() == 1; }));
  EXPECT_EQ(segment_file_count(dir_.path()), 4u);
  EXPECT_EQ(gate_.count("publish"), 3);
  EXPECT_EQ(gate_.count("create"), 5);
  StoreStats s = h_.store->stats();
  EXPECT_EQ(s.segments, 4u);
  EXPECT_EQ(s.disk_bytes, 4 * kMiB) << "the spare is not a segment";
  EXPECT_EQ(s.spare_bytes, 1 * kMiB);
  ASSERT_TRUE(h_.close().is_ok());
  EXPECT_EQ(spare_files(), 0u) << "close deletes an unused spare";
  ASSERT_TRUE(h_.reopen().is_ok());
  for (uint64_t i = 0; i < 12; ++i) EXPECT_TRUE(h_.check_seeded(i, 300 * kKiB));
}

TEST_F(StoreRollTest, LoopServesWhileTheSpareIsRenamedIntoPlace) {
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(h_.put_seeded(i, 300 * kKiB).is_ok());
  ASSERT_TRUE(run_ticking([&] { return spare_files() == 1; }));
  gate_.hold("publish");
  auto p = payload(3, 300 * kKiB);
  std::optional<Status> put;
  h_.store->put(test_key(3), {768, 1024}, p.data(), p.size(), [&](Status st) { put = st; });
  ASSERT_TRUE(run_ticking([&] { return gate_.someone_waiting(); }));
  // Reads of stored objects complete while the put waits for the renamed segment.
  EXPECT_TRUE(h_.check_seeded(1, 300 * kKiB));
  EXPECT_FALSE(put.has_value());
  gate_.open();
  ASSERT_TRUE(run_until(h_.ex, [&] { return put.has_value(); }));
  EXPECT_TRUE(put->is_ok()) << put->to_string();
  EXPECT_EQ(segment_file_count(dir_.path()), 2u);
}

TEST_F(StoreRollTest, WritesWaitingForASegmentKeepCallOrder) {
  gate_.hold("create");
  auto a = payload(1, 300 * kKiB), b = payload(2, 300 * kKiB);
  std::vector<std::string> done;
  auto note = [&](std::string what) {
    return [&done, what](Status st) { done.push_back(what + (st.is_ok() ? "" : " failed")); };
  };
  h_.store->put(test_key(1), {0, 256}, a.data(), a.size(), note("put a"));
  h_.store->put(test_key(1), {0, 256}, b.data(), b.size(), note("put b over a"));
  h_.store->put(test_key(2), {0, 256}, a.data(), a.size(), note("put c"));
  h_.store->remove(test_key(2), note("remove c"));
  ASSERT_TRUE(run_ticking([&] { return gate_.someone_waiting(); }));
  EXPECT_TRUE(done.empty());
  gate_.open();
  ASSERT_TRUE(run_until(h_.ex, [&] { return done.size() == 4; }));
  for (const auto& d : done) EXPECT_EQ(d.find("failed"), std::string::npos) << d;
  EXPECT_FALSE(h_.store->contains(test_key(2)));
  ASSERT_TRUE(h_.reopen().is_ok());  // the log agrees
  EXPECT_FALSE(h_.store->contains(test_key(2)));
  auto buf = AlignedBuffer::allocate(300 * kKiB);
  ASSERT_TRUE(buf.is_ok());
  ASSERT_TRUE(h_.get(test_key(1), buf->data(), buf->size()).is_ok());
  EXPECT_EQ(std::memcmp(buf->data(), b.data(), b.size()), 0) << "the later put must win";
}

TEST_F(StoreRollTest, LargeUnalignedPutIsHashedAndCopiedOffTheLoop) {
  ASSERT_TRUE(h_.put_seeded(0, 4 * kKiB).is_ok());  // the first segment is in place
  gate_.hold("prepare");
  std::vector<uint8_t> raw(300 * kKiB + 1);
  fill_payload(5, raw.data() + 1, 300 * kKiB);  // one byte off 4 KiB alignment
  std::optional<Status> put;
  h_.store->put(test_key(5), {1280, 1536}, raw.data() + 1, 300 * kKiB,
                [&](Status st) { put = st; });
  ASSERT_TRUE(run_ticking([&] { return gate_.someone_waiting(); }));
  EXPECT_TRUE(h_.check_seeded(0, 4 * kKiB));  // the loop serves reads meanwhile
  EXPECT_FALSE(put.has_value());
  gate_.open();
  ASSERT_TRUE(run_until(h_.ex, [&] { return put.has_value(); }));
  EXPECT_TRUE(put->is_ok()) << put->to_string();
  EXPECT_TRUE(h_.check_seeded(5, 300 * kKiB));
  EXPECT_GE(gate_.count("prepare"), 1);
}

TEST_F(StoreRollTest, SmallPutIsCopiedBeforePutReturns) {
  ASSERT_TRUE(h_.put_seeded(0, 4 * kKiB).is_ok());
  auto p = payload(7, 60 * kKiB);
  std::optional<Status> put;
  h_.store->put(test_key(7), {0, 256}, p.data(), p.size(), [&](Status st) { put = st; });
  std::fill(p.begin(), p.end(), 0);  // the caller may reuse a small payload's buffer at once
  ASSERT_TRUE(run_until(h_.ex, [&] { return put.has_value(); }));
  ASSERT_TRUE(put->is_ok());
  EXPECT_TRUE(h_.check_seeded(7, 60 * kKiB));
  EXPECT_EQ(gate_.count("prepare"), 0);
}

TEST_F(StoreRollTest, SpareLeftByACrashIsDeletedAtOpen) {
  ASSERT_TRUE(h_.put_seeded(0, 300 * kKiB).is_ok());
  ASSERT_TRUE(run_ticking([&] { return spare_files() == 1; }));
  // The store goes away without close (a crash keeps the spare on disk).
  h_.store.reset();
  EXPECT_EQ(spare_files(), 1u);
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_TRUE(h_.check_seeded(0, 300 * kKiB));
  ASSERT_TRUE(h_.close().is_ok());
  EXPECT_EQ(spare_files(), 0u);
  EXPECT_EQ(segment_file_count(dir_.path()), 1u);
}

TEST_F(StoreRollTest, NoSpareWhenItWouldNotFitUnderCapacity) {
  h_.options.capacity_bytes = 2 * kMiB;
  ASSERT_TRUE(h_.reopen().is_ok());
  for (uint64_t i = 0; i < 9; ++i) ASSERT_TRUE(h_.put_seeded(i, 300 * kKiB).is_ok());
  // Three segments made, the first reclaimed when the third was needed, never a spare over 2 MiB.
  EXPECT_EQ(h_.store->stats().reclaimed_segments, 1u);
  EXPECT_LE(h_.store->stats().disk_bytes, 2 * kMiB);
  EXPECT_EQ(spare_files(), 0u);
  for (uint64_t i = 3; i < 9; ++i) EXPECT_TRUE(h_.check_seeded(i, 300 * kKiB));
}

}  // namespace
}  // namespace tempokv::testing
