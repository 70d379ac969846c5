// ReadRateCap over the simulated engine: exact virtual completion times.
#include "ssd/read_rate_cap.h"

#include <gtest/gtest.h>

#include "executor/sim_executor.h"
#include "ssd/fault_injecting_engine.h"
#include "ssd/sim_ssd_engine.h"

namespace tempokv {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr double kCapBytesPerS = 4096.0 * 1000;  // one 4 KiB block per ms

class ReadRateCapTest : public ::testing::Test {
 protected:
  void make(double burst_bytes) {
    SsdEngineOptions o;
    o.kind = SsdEngineKind::kSimulated;
    o.sim_latency = microseconds(100);
    o.sim_read_bytes_per_s = 4096.0 * 1e9;  // the "fast drive": a block in 1 ns
    o.sim_write_bytes_per_s = 4096.0 * 1e9;
    o.sim_max_concurrency = 1024;
    auto faults =
        std::make_unique<FaultInjectingEngine>(ex_, std::make_unique<SimSsdEngine>(ex_, o));
    faults_ = faults.get();
    cap_ = std::make_unique<ReadRateCap>(ex_, std::move(faults), kCapBytesPerS, burst_bytes);
    file_ = *cap_->add_file(-1);
  }
  // Issues n reads of len at once; returns when each completed, from the start.
  std::vector<Duration> reads(int n, size_t len = 4096) {
    const TimePoint start = ex_.now();
    std::vector<Duration> at(static_cast<size_t>(n), Duration::max());
    for (int i = 0; i < n; ++i) {
      cap_->read(file_, 0, nullptr, len, [&, i](Result<size_t> r) {
        if (r.is_ok()) at[static_cast<size_t>(i)] = ex_.now() - start;
      });
    }
    ex_.run();
    return at;
  }

  SimExecutor ex_;
  FaultInjectingEngine* faults_ = nullptr;
  std::unique_ptr<ReadRateCap> cap_;
  FileId file_ = 0;
};

TEST_F(ReadRateCapTest, ReadsIssuedTogetherCompleteOneBlockTimeApartAtTheCap) {
  make(0);
  const std::vector<Duration> at = reads(4);
  const Duration inner = microseconds(100) + std::chrono::nanoseconds(1);
  for (size_t i = 0; i < at.size(); ++i) {
    EXPECT_NEAR(to_seconds(at[i]), to_seconds(inner + milliseconds(1) * int(i + 1)), 1e-8) << i;
  }
}

TEST_F(ReadRateCapTest, TheBurstCompletesAtTheDrivesOwnSpeedThenTheCapApplies) {
  make(2 * 4096);
  const std::vector<Duration> at = reads(4);
  const Duration inner = microseconds(100) + std::chrono::nanoseconds(1);
  EXPECT_NEAR(to_seconds(at[0]), to_seconds(inner), 1e-8);
  EXPECT_NEAR(to_seconds(at[1]), to_seconds(inner), 1e-8);
  EXPECT_NEAR(to_seconds(at[2]), to_seconds(inner + milliseconds(1)), 1e-8);
  EXPECT_NEAR(to_seconds(at[3]), to_seconds(inner + milliseconds(2)), 1e-8);
}

TEST_F(ReadRateCapTest, AnIdleDriveEarnsBackItsBurstButNoMore) {
  make(4096);
  reads(3);  // leaves a debt of 2 blocks, paid 2 ms later
  ex_.run_for(milliseconds(10));
  const std::vector<Duration> at = reads(2);
  const Duration inner = microseconds(100) + std::chrono::nanoseconds(1);
  EXPECT_NEAR(to_seconds(at[0]), to_seconds(inner), 1e-8);
  EXPECT_NEAR(to_seconds(at[1]), to_seconds(inner + milliseconds(1)), 1e-8);
}

TEST_F(ReadRateCapTest, FailedReadsAndWritesAreNotHeld) {
  make(0);
  faults_->fail_next_reads(1);
  const std::vector<Duration> at = reads(2);
  EXPECT_EQ(at[0], Duration::max());  // failed at once, not counted as a completion time
  const Duration inner = microseconds(100) + std::chrono::nanoseconds(1);
  EXPECT_NEAR(to_seconds(at[1]), to_seconds(inner + milliseconds(1)), 1e-8);
  const TimePoint start = ex_.now();
  TimePoint done{};
  cap_->write(file_, 0, nullptr, 1 << 20, [&](Result<size_t>) { done = ex_.now(); });
  ex_.run();
  EXPECT_LT(done - start, milliseconds(1));  // 256 blocks: 256 ms if writes were capped
}

}  // namespace
}  // namespace tempokv
