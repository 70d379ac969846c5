// Reads before writes (StoreOptions::write_bytes_in_flight, _while_reading): a get issued behind a
// burst of puts is not queued behind the whole burst, writes still all complete (one record always
// goes), and close waits for the writes the store held back. Simulated SSD with one service slot,
// so the device serves requests first come, first served and the times are exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "executor/sim_executor.h"
#include "ssd/sim_ssd_engine.h"
#include "store/store.h"

namespace tempokv {
namespace {

constexpr uint64_t kMiB1 = 1024 * 1024;
constexpr int64_t kLatencyNs = 10'000;
constexpr int64_t kWriteNs = kLatencyNs + int64_t(kMiB1 + 4096);  // a 1 MiB record at 1 B/ns
constexpr int64_t kReadNs = kLatencyNs + int64_t(kMiB1 / 2);      // its payload at 2 B/ns

class StoreReadPriorityTest : public ::testing::Test {
 protected:
  void open(uint64_t write_bytes, uint64_t write_bytes_while_reading) {
    SsdEngineOptions eo;
    eo.kind = SsdEngineKind::kSimulated;
    eo.sim_latency = std::chrono::nanoseconds(kLatencyNs);
    eo.sim_write_bytes_per_s = 1e9;
    eo.sim_read_bytes_per_s = 2e9;
    eo.sim_max_concurrency = 1;
    engine_ = std::make_unique<SimSsdEngine>(ex_, eo);
    StoreOptions so;
    so.simulated = true;
    so.segment_bytes = 64 * kMiB1;
    so.capacity_bytes = 1024 * kMiB1;
    so.max_object_bytes = 4 * kMiB1;
    so.write_bytes_in_flight = write_bytes;
    so.write_bytes_in_flight_while_reading = write_bytes_while_reading;
    auto s = Store::open(ex_, *engine_, so);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    store_ = std::move(s).value();
    store_->set_write_listener([this](uint64_t, bool started) {
      writes_at_engine_ += started ? 1 : -1;
      most_writes_at_engine_ = std::max(most_writes_at_engine_, writes_at_engine_);
    });
    // Object 0 is on the device before anything is measured.
    store_->put(Key{1, 0}, {0, 256}, nullptr, kMiB1, [](Status st) { ASSERT_TRUE(st.is_ok()); });
    ex_.run();
    most_writes_at_engine_ = 0;
    t0_ = ns();
  }
  int64_t ns() const { return ex_.now().time_since_epoch().count(); }
  // Puts objects 1..n of 1 MiB now; each completion's time goes to put_done_.
  void burst(uint64_t n) {
    for (uint64_t i = 1; i <= n; ++i) {
      store_->put(Key{1, i}, {0, 256}, nullptr, kMiB1, [this](Status st) {
        EXPECT_TRUE(st.is_ok()) << st.to_string();
        put_done_.push_back(ns() - t0_);
      });
    }
  }
  // Gets object 0 now; the completion's time (since t0) goes to get_done_.
  void get() {
    store_->get(Key{1, 0}, nullptr, 0, [this](Result<size_t> r) {
      EXPECT_TRUE(r.is_ok()) << r.status().to_string();
      get_done_.push_back(ns() - t0_);
    });
  }

  SimExecutor ex_;
  std::unique_ptr<SimSsdEngine> engine_;
  std::unique_ptr<Store> store_;
  int64_t t0_ = 0;
  int writes_at_engine_ = 0;
  int most_writes_at_engine_ = 0;
  std::vector<int64_t> put_done_;
  std::vector<int64_t> get_done_;
};

TEST_F(StoreReadPriorityTest, AGetBehindABurstOfPutsWaitsForTheOneWriteAtTheDeviceOnly) {
  open(0, 0);  // one record at a time
  burst(8);
  get();
  ex_.run();
  // The first write holds the device's slot; the get is next, before the second write.
  EXPECT_EQ(get_done_, std::vector<int64_t>{kWriteNs + kReadNs});
  ASSERT_EQ(put_done_.size(), 8u);
  EXPECT_EQ(most_writes_at_engine_, 1);
  EXPECT_EQ(*std::max_element(put_done_.begin(), put_done_.end()),
            8 * kWriteNs + kReadNs + kLatencyNs);  // + a sync
}

TEST_F(StoreReadPriorityTest, WithoutALimitTheGetQueuesBehindTheWholeBurst) {
  open(1024 * kMiB1, 1024 * kMiB1);
  burst(8);
  get();
  ex_.run();
  EXPECT_EQ(get_done_, std::vector<int64_t>{8 * kWriteNs + kReadNs});
  EXPECT_EQ(put_done_.size(), 8u);
  EXPECT_EQ(most_writes_at_engine_, 8);
}

TEST_F(StoreReadPriorityTest, WithNoGetInFlightWritesGoUpToTheirByteLimit) {
  open(3 * (kMiB1 + 4096), 0);  // three records fit, not four
  burst(8);
  ex_.run();
  EXPECT_EQ(put_done_.size(), 8u);
  EXPECT_EQ(most_writes_at_engine_, 3);
}

// Gets kept back to back (each completion issues the next, twenty in all) never leave the device
// free of reads, yet every put completes, one record at a time, before the stream ends.
TEST_F(StoreReadPriorityTest, AStreamOfGetsDoesNotStarveTheWrites) {
  open(64 * kMiB1, 0);
  int left = 20;
  std::function<void()> next = [&] {
    store_->get(Key{1, 0}, nullptr, 0, [&](Result<size_t> r) {
      EXPECT_TRUE(r.is_ok());
      get_done_.push_back(ns() - t0_);
      if (--left > 0) next();
    });
  };
  next();
  burst(4);
  ex_.run();
  ASSERT_EQ(put_done_.size(), 4u);
  ASSERT_EQ(get_done_.size(), 20u);
  EXPECT_EQ(most_writes_at_engine_, 1);
  EXPECT_LT(*std::max_element(put_done_.begin(), put_done_.end()), get_done_.back());
}

TEST_F(StoreReadPriorityTest, CloseWaitsForTheWritesHeldBack) {
  open(0, 0);
  burst(4);
  get();
  std::optional<Status> closed;
  int puts_at_close = -1;
  store_->close([&](Status st) {
    closed = st;
    puts_at_close = int(put_done_.size());
  });
  ex_.run();
  ASSERT_TRUE(closed.has_value());
  EXPECT_TRUE(closed->is_ok()) << closed->to_string();
  EXPECT_EQ(puts_at_close, 4);
  EXPECT_EQ(get_done_.size(), 1u);
}

}  // namespace
}  // namespace tempokv
