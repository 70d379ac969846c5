#include "transfer/sim_transfer_engine.h"

#include <gtest/gtest.h>

#include "executor/sim_executor.h"

namespace tempokv {
namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;

class SimTransferTest : public ::testing::Test {
 protected:
  SimTransferTest() {
    TransferEngineOptions o;
    o.kind = TransferEngineKind::kSimulated;
    o.sim_copy_latency = microseconds(10);
    o.sim_bytes_per_s = 1e9;  // 1 byte per ns
    auto e = make_transfer_engine(exec_, o);
    engine_ = std::move(e).value();
    dst_ = engine_->allocate(1 << 30).value();
  }
  SimExecutor exec_;
  std::unique_ptr<TransferEngine> engine_;
  std::unique_ptr<DeviceBuffer> dst_;
};

TEST_F(SimTransferTest, CopyTakesLatencyPlusBytesOverBandwidth) {
  TimePoint done{};
  engine_->copy_to_device(nullptr, *dst_, 0, 1'000'000, [&](Status st) {
    EXPECT_TRUE(st.is_ok());
    done = exec_.now();
  });
  exec_.run();
  EXPECT_EQ(done.time_since_epoch(), microseconds(10) + nanoseconds(1'000'000));
}

TEST_F(SimTransferTest, CopiesShareOneLinkInIssueOrder) {
  std::vector<TimePoint> done;
  for (int i = 0; i < 3; ++i) {
    engine_->copy_to_device(nullptr, *dst_, 0, 500'000, [&](Status) { done.push_back(exec_.now()); });
  }
  exec_.run();
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].time_since_epoch(), nanoseconds(510'000));
  EXPECT_EQ(done[1].time_since_epoch(), nanoseconds(1'020'000));
  EXPECT_EQ(done[2].time_since_epoch(), nanoseconds(1'530'000));
  EXPECT_EQ(engine_->stats().copies, 3u);
  EXPECT_EQ(engine_->stats().bytes, 1'500'000u);
}

TEST_F(SimTransferTest, CopyIssuedAfterTheLinkIsIdleStartsWhenIssued) {
  TimePoint done{};
  engine_->copy_to_device(nullptr, *dst_, 0, 1000, [](Status) {});
  exec_.run_until(TimePoint(microseconds(100)));
  engine_->copy_to_device(nullptr, *dst_, 0, 1000, [&](Status) { done = exec_.now(); });
  exec_.run();
  EXPECT_EQ(done.time_since_epoch(), microseconds(100) + microseconds(10) + nanoseconds(1000));
}

TEST_F(SimTransferTest, OutOfRangeCopyFailsWithInvalidArgument) {
  Status got;
  engine_->copy_to_device(nullptr, *dst_, (1 << 30) - 10, 11, [&](Status st) { got = st; });
  exec_.run();
  EXPECT_EQ(got.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(got.message().find("exceeds"), std::string::npos);
}

TEST_F(SimTransferTest, SimulatedBuffersHaveSizeButNoBytes) {
  EXPECT_EQ(dst_->data(), nullptr);
  EXPECT_EQ(dst_->size(), size_t(1) << 30);
  EXPECT_EQ(dst_->kind(), DeviceKind::kSimulated);
}

TEST(TransferEngineOptionsTest, RejectsNonPositiveBandwidth) {
  TransferEngineOptions o;
  o.sim_bytes_per_s = 0;
  Status st = o.validate();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("sim_bytes_per_s"), std::string::npos);
}

TEST(TransferEngineKindTest, ParsesNamesAndRejectsOthers) {
  EXPECT_EQ(parse_transfer_engine_kind("emulated").value(), TransferEngineKind::kEmulated);
  EXPECT_EQ(parse_transfer_engine_kind("sim").value(), TransferEngineKind::kSimulated);
  EXPECT_FALSE(parse_transfer_engine_kind("gpu").is_ok());
}

}  // namespace
}  // namespace tempokv
