// Simulated mode: no files and no bytes, exact virtual times from the simulated SSD engine, and
// the same capacity and reclamation logic as on disk.
#include <gtest/gtest.h>

#include <algorithm>

#include "executor/sim_executor.h"
#include "ssd/sim_ssd_engine.h"
#include "store/store.h"

namespace tempokv {
namespace {

constexpr uint64_t kMiB1 = 1024 * 1024;

class StoreSimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SsdEngineOptions eo;
    eo.kind = SsdEngineKind::kSimulated;
    eo.sim_latency = std::chrono::microseconds(10);
    eo.sim_write_bytes_per_s = 1e9;  // 1 byte per ns
    eo.sim_read_bytes_per_s = 2e9;
    engine_ = std::make_unique<SimSsdEngine>(ex_, eo);
    options_.simulated = true;
    options_.segment_bytes = 1 * kMiB1;
    options_.capacity_bytes = 3 * kMiB1;
    options_.max_object_bytes = 512 * 1024;
    auto s = Store::open(ex_, *engine_, options_);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    store_ = std::move(s).value();
  }
  int64_t ns() const { return ex_.now().time_since_epoch().count(); }
  Status put_now(uint64_t i, size_t bytes) {
    std::optional<Status> r;
    store_->put(Key{1, i}, {0, 256}, nullptr, bytes, [&](Status st) { r = st; });
    ex_.run();
    return r.value_or(Status::internal("put never completed"));
  }

  SimExecutor ex_;
  std::unique_ptr<SimSsdEngine> engine_;
  StoreOptions options_;
  std::unique_ptr<Store> store_;
};

TEST_F(StoreSimTest, PutTakesWriteOfHeaderAndPayloadThenOneSync) {
  int64_t done_ns = -1;
  store_->put(Key{1, 1}, {0, 256}, nullptr, 512 * 1024, [&](Status st) {
    ASSERT_TRUE(st.is_ok());
    done_ns = ns();
  });
  ex_.run();
  // 10 us latency + (4096 + 524288) bytes at 1 B/ns, then a 10 us sync.
  EXPECT_EQ(done_ns, 10'000 + 528'384 + 10'000);
  EXPECT_TRUE(store_->contains(Key{1, 1}));
}

TEST_F(StoreSimTest, GetTakesLatencyPlusPayloadAtReadRate) {
  ASSERT_TRUE(put_now(1, 512 * 1024).is_ok());
  int64_t start = ns(), done_ns = -1;
  store_->get(Key{1, 1}, nullptr, 0, [&](Result<size_t> r) {
    ASSERT_TRUE(r.is_ok());
    EXPECT_EQ(*r, 512u * 1024);
    done_ns = ns();
  });
  ex_.run();
  EXPECT_EQ(done_ns - start, 10'000 + 262'144);  // 524288 bytes at 2 B/ns
}

TEST_F(StoreSimTest, WritesFinishingDuringASyncShareTheNextOne) {
  std::vector<int64_t> done;
  for (uint64_t i = 0; i < 3; ++i) {
    store_->put(Key{1, i}, {0, 256}, nullptr, 100 * 1024, [&](Status st) {
      ASSERT_TRUE(st.is_ok());
      done.push_back(ns());
    });
  }
  ex_.run();
  std::sort(done.begin(), done.end());
  // Three writes of 106496 bytes share the device: all end at 10 us + 319488 ns. The first to
  // complete starts a sync; the other two wait for it and share the next.
  const int64_t writes_end = 10'000 + 3 * 106'496;
  EXPECT_EQ(done, (std::vector<int64_t>{writes_end + 10'000, writes_end + 20'000,
                                        writes_end + 20'000}));
  EXPECT_EQ(store_->stats().syncs, 2u);
}

TEST_F(StoreSimTest, CapacityReclaimsTheOldestSegmentWithNoFiles) {
  std::vector<Key> evicted;
  store_->set_eviction_listener([&](const Key& k) { evicted.push_back(k); });
  // Three 300 KiB records fill a 1 MiB segment; the tenth needs a fourth segment, over capacity.
  for (uint64_t i = 0; i < 10; ++i) ASSERT_TRUE(put_now(i, 300 * 1024).is_ok());
  StoreStats s = store_->stats();
  EXPECT_EQ(s.reclaimed_segments, 1u);
  EXPECT_EQ(s.reclaimed_objects, 3u);
  EXPECT_EQ(s.segments, 3u);
  EXPECT_EQ(s.disk_bytes, 3 * kMiB1);
  EXPECT_EQ(evicted, (std::vector<Key>{{1, 0}, {1, 1}, {1, 2}}));
  EXPECT_FALSE(store_->contains(Key{1, 0}));
  EXPECT_TRUE(store_->contains(Key{1, 9}));
  EXPECT_EQ(store_->segment_path(store_->lookup(Key{1, 9})->segment), "");
}

TEST_F(StoreSimTest, RemoveTakesOneHeaderWriteAndASync) {
  ASSERT_TRUE(put_now(1, 4096).is_ok());
  int64_t start = ns(), done_ns = -1;
  store_->remove(Key{1, 1}, [&](Status st) {
    ASSERT_TRUE(st.is_ok());
    done_ns = ns();
  });
  EXPECT_FALSE(store_->contains(Key{1, 1}));
  ex_.run();
  EXPECT_EQ(done_ns - start, 10'000 + 4'096 + 10'000);
}

// index_changes() moves exactly when an object leaves the index or is replaced (what can turn a
// lookup that found an object into one that does not, or finds another size): a put of a new key
// leaves it alone.
TEST_F(StoreSimTest, IndexChangesCountRemovalsReplacementsAndReclamationsNotNewKeys) {
  ASSERT_TRUE(put_now(1, 100 * 1024).is_ok());
  ASSERT_TRUE(put_now(2, 100 * 1024).is_ok());
  EXPECT_EQ(store_->index_changes(), 0u);
  ASSERT_TRUE(put_now(1, 200 * 1024).is_ok());  // replaces key 1
  EXPECT_EQ(store_->index_changes(), 1u);
  std::optional<Status> removed;
  store_->remove(Key{1, 2}, [&](Status st) { removed = st; });
  ex_.run();
  ASSERT_TRUE(removed.has_value() && removed->is_ok());
  EXPECT_EQ(store_->index_changes(), 2u);
  // New keys beyond the capacity: the oldest segments are reclaimed, each object of theirs
  // leaving the index once.
  for (uint64_t i = 10; i < 40; ++i) ASSERT_TRUE(put_now(i, 400 * 1024).is_ok());
  const uint64_t reclaimed = store_->stats().reclaimed_objects;
  EXPECT_GT(reclaimed, 0u);
  EXPECT_EQ(store_->index_changes(), 2u + reclaimed);
}

}  // namespace
}  // namespace tempokv
