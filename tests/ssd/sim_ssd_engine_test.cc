// The simulated SSD: exact virtual completion times under latency, processor sharing and the
// concurrency limit.
#include "ssd/sim_ssd_engine.h"

#include <gtest/gtest.h>

#include "common/units.h"
#include "executor/sim_executor.h"

namespace tempokv {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

constexpr Duration kLatency = microseconds(80);

SsdEngineOptions gib_per_s_options(double read_gib_s = 1.0, double write_gib_s = 1.0) {
  SsdEngineOptions o;
  o.kind = SsdEngineKind::kSimulated;
  o.sim_latency = kLatency;
  o.sim_read_bytes_per_s = read_gib_s * static_cast<double>(kGiB);
  o.sim_write_bytes_per_s = write_gib_s * static_cast<double>(kGiB);
  return o;
}

class SimSsdEngineTest : public ::testing::Test {
 protected:
  void make(const SsdEngineOptions& options) {
    engine_ = std::make_unique<SimSsdEngine>(ex_, options);
    auto id = engine_->add_file(-1);
    ASSERT_TRUE(id.is_ok());
    file_ = *id;
  }
  // Issues a read now and returns the slot its completion time lands in.
  std::shared_ptr<std::optional<TimePoint>> read(uint64_t offset, size_t len) {
    auto done = std::make_shared<std::optional<TimePoint>>();
    engine_->read(file_, offset, nullptr, len, [this, done, len](Result<size_t> r) {
      EXPECT_TRUE(r.is_ok()) << r.status().to_string();
      if (r.is_ok()) {
        EXPECT_EQ(*r, len);
      }
      *done = ex_.now();
    });
    return done;
  }
  std::shared_ptr<std::optional<TimePoint>> write(uint64_t offset, size_t len) {
    auto done = std::make_shared<std::optional<TimePoint>>();
    engine_->write(file_, offset, nullptr, len, [this, done](Result<size_t> r) {
      EXPECT_TRUE(r.is_ok()) << r.status().to_string();
      *done = ex_.now();
    });
    return done;
  }
  static TimePoint at(Duration d) { return TimePoint(d); }

  SimExecutor ex_;
  std::unique_ptr<SimSsdEngine> engine_;
  FileId file_ = 0;
};

TEST_F(SimSsdEngineTest, ElevenGibReadAtElevenGibPerSecondTakesOneSecondPlusLatency) {
  SsdEngineOptions o;  // the defaults: 11 GiB/s reads, 80 us latency
  make(o);
  auto done = read(0, 11 * kGiB);
  ex_.run();
  ASSERT_TRUE(done->has_value());
  EXPECT_EQ(**done, at(seconds(1) + kLatency));
  SsdEngineStats s = engine_->stats();
  EXPECT_EQ(s.reads, 1u);
  EXPECT_EQ(s.bytes_read, 11 * kGiB);
  EXPECT_EQ(s.in_flight, 0u);
  EXPECT_EQ(s.busy_ns, static_cast<uint64_t>((seconds(1) + kLatency).count()));
}

TEST_F(SimSsdEngineTest, TwoEqualReadsStartedTogetherShareBandwidthAndFinishTogether) {
  make(gib_per_s_options());
  auto a = read(0, kGiB);
  auto b = read(kGiB, kGiB);
  ex_.run();
  EXPECT_EQ(**a, at(kLatency + seconds(2)));
  EXPECT_EQ(**b, at(kLatency + seconds(2)));
  EXPECT_EQ(engine_->stats().busy_ns, static_cast<uint64_t>((kLatency + seconds(2)).count()));
}

TEST_F(SimSsdEngineTest, ConcurrencyLimitQueuesTheRestInArrivalOrder) {
  SsdEngineOptions o = gib_per_s_options();
  o.sim_max_concurrency = 1;
  make(o);
  auto a = read(0, kGiB);
  auto b = read(kGiB, kGiB / 2);
  auto c = read(0, kGiB / 4);
  EXPECT_EQ(engine_->in_service(), 1u);
  EXPECT_EQ(engine_->queued(), 2u);
  ex_.run();
  EXPECT_EQ(**a, at(kLatency + seconds(1)));
  EXPECT_EQ(**b, at(2 * kLatency + milliseconds(1500)));
  EXPECT_EQ(**c, at(3 * kLatency + milliseconds(1750)));
}

TEST_F(SimSsdEngineTest, LateArrivalSlowsTheRunningRequest) {
  make(gib_per_s_options());
  auto a = read(0, kGiB);  // alone it would finish at latency + 1 s
  ex_.run_until(at(milliseconds(500)));
  EXPECT_FALSE(a->has_value());
  auto b = read(kGiB, kGiB);  // transfers from 500 ms + latency
  ex_.run();
  // At 500 ms + latency A has 500 ms of work left, which takes 1 s at half the device; then B,
  // with 500 ms of its work done, finishes alone.
  EXPECT_EQ(**a, at(kLatency + milliseconds(1500)));
  EXPECT_EQ(**b, at(kLatency + seconds(2)));
}

TEST_F(SimSsdEngineTest, ReadsAndWritesShareOneDeviceAtTheirOwnRates) {
  make(gib_per_s_options(/*read_gib_s=*/1.0, /*write_gib_s=*/0.5));
  auto r = read(0, kGiB);   // 1 s of device time
  auto w = write(0, kGiB);  // 2 s of device time
  ex_.run();
  EXPECT_EQ(**r, at(kLatency + seconds(2)));
  EXPECT_EQ(**w, at(kLatency + seconds(3)));
  EXPECT_EQ(engine_->stats().bytes_written, kGiB);
}

TEST_F(SimSsdEngineTest, CompletionTimesRoundUpToWholeNanoseconds) {
  SsdEngineOptions o;
  o.sim_latency = Duration::zero();
  o.sim_read_bytes_per_s = 3.0;
  o.direct = false;
  make(o);
  auto done = read(0, 1);  // 333333333.3 ns
  ex_.run();
  EXPECT_EQ(**done, at(nanoseconds(333333334)));
}

TEST_F(SimSsdEngineTest, SyncCompletesAfterLatencyWithoutTakingASlot) {
  SsdEngineOptions o = gib_per_s_options();
  o.sim_max_concurrency = 1;
  make(o);
  auto a = read(0, kGiB);
  std::optional<TimePoint> synced;
  engine_->sync(file_, [&](Result<size_t> r) {
    EXPECT_TRUE(r.is_ok());
    EXPECT_EQ(*r, 0u);
    synced = ex_.now();
  });
  ex_.run();
  EXPECT_EQ(*synced, at(kLatency));
  EXPECT_EQ(**a, at(kLatency + seconds(1)));
  EXPECT_EQ(engine_->stats().syncs, 1u);
}

TEST_F(SimSsdEngineTest, BadRequestsFailWithInvalidArgument) {
  make(gib_per_s_options());
  std::vector<Status> got;
  auto record = [&](Result<size_t> r) { got.push_back(r.status()); };
  engine_->read(file_ + 1, 0, nullptr, 4096, record);
  engine_->read(file_, 512, nullptr, 4096, record);
  engine_->remove_file(file_);
  engine_->read(file_, 0, nullptr, 4096, record);
  ex_.run();
  ASSERT_EQ(got.size(), 3u);
  for (const Status& st : got) EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(got[0].message().find("file id 1"), std::string::npos) << got[0].message();
  EXPECT_NE(got[1].message().find("offset 512"), std::string::npos) << got[1].message();
  EXPECT_EQ(ex_.now(), TimePoint{});
}

TEST_F(SimSsdEngineTest, HookResultReplacesTheCallbackResult) {
  make(gib_per_s_options());
  std::optional<Status> got;
  size_t hook_bytes = 0;
  engine_->read(
      file_, 0, nullptr, 4096, [&](Result<size_t> r) { got = r.status(); },
      [&](size_t bytes) {
        hook_bytes = bytes;
        return Status::corruption("bad checksum");
      });
  ex_.run();
  EXPECT_EQ(hook_bytes, 4096u);
  EXPECT_EQ(got->code(), StatusCode::kCorruption);
}

TEST_F(SimSsdEngineTest, DestroyingTheEngineCancelsRequestsInFlight) {
  SsdEngineOptions o = gib_per_s_options();
  o.sim_max_concurrency = 1;
  make(o);
  std::vector<StatusCode> got;
  std::vector<TimePoint> when;
  for (int i = 0; i < 3; ++i) {
    engine_->read(file_, 0, nullptr, kGiB, [&](Result<size_t> r) {
      got.push_back(r.status().code());
      when.push_back(ex_.now());
    });
  }
  ex_.run_until(at(milliseconds(10)));
  engine_.reset();
  ex_.run();
  EXPECT_EQ(got, std::vector<StatusCode>(3, StatusCode::kCancelled));
  EXPECT_EQ(when, std::vector<TimePoint>(3, at(milliseconds(10))));
}

TEST_F(SimSsdEngineTest, SameScenarioTwiceGivesIdenticalTimes) {
  auto scenario = [] {
    SimExecutor ex;
    SsdEngineOptions o;
    o.sim_max_concurrency = 3;
    SimSsdEngine engine(ex, o);
    FileId f = *engine.add_file(-1);
    std::vector<int64_t> times;
    for (int i = 0; i < 20; ++i) {
      ex.at(TimePoint(microseconds(37 * i)), [&, i] {
        engine.read(f, 0, nullptr, (i % 5 + 1) * 12288,
                    [&](Result<size_t>) { times.push_back(ex.now().time_since_epoch().count()); });
      });
    }
    ex.run();
    return times;
  };
  auto first = scenario();
  EXPECT_EQ(first.size(), 20u);
  EXPECT_EQ(first, scenario());
}

}  // namespace
}  // namespace tempokv
