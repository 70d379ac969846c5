#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "executor/real_executor.h"
#include "transfer/transfer_engine.h"

namespace tempokv {
namespace {

class EmulatedTransferTest : public ::testing::Test {
 protected:
  EmulatedTransferTest() {
    TransferEngineOptions o;
    o.kind = TransferEngineKind::kEmulated;
    engine_ = make_transfer_engine(exec_, o).value();
  }
  RealExecutor exec_;
  std::unique_ptr<TransferEngine> engine_;
};

TEST_F(EmulatedTransferTest, CopiesLandAndCountAsEmulatedDeviceCopies) {
  auto dst = engine_->allocate(1 << 20).value();
  EXPECT_EQ(dst->kind(), DeviceKind::kEmulated);
  std::vector<uint8_t> src(100'000);
  std::iota(src.begin(), src.end(), 0);
  int done = 0;
  engine_->copy_to_device(src.data(), *dst, 4096, 60'000, [&](Status st) {
    EXPECT_TRUE(st.is_ok());
    EXPECT_EQ(done, 0);  // in issue order
    ++done;
  });
  engine_->copy_to_device(src.data() + 60'000, *dst, 4096 + 60'000, 40'000, [&](Status st) {
    EXPECT_TRUE(st.is_ok());
    ++done;
  });
  exec_.run_until([&] { return done == 2; });
  EXPECT_EQ(std::memcmp(dst->data() + 4096, src.data(), src.size()), 0);
  TransferStats s = engine_->stats();
  EXPECT_EQ(s.copies, 2u);
  EXPECT_EQ(s.cpu_copies.emulated_device_copy_bytes, 100'000u);
  EXPECT_EQ(s.cpu_copies.host_copy_bytes, 0u);
  std::vector<uint8_t> back(100'000);
  ASSERT_TRUE(engine_->copy_to_host(*dst, 4096, back.data(), back.size()).is_ok());
  EXPECT_EQ(back, src);
}

TEST_F(EmulatedTransferTest, CopyPastTheBufferEndFailsOnTheLoop) {
  auto dst = engine_->allocate(8192).value();
  std::vector<uint8_t> src(8192);
  Status got;
  bool done = false;
  engine_->copy_to_device(src.data(), *dst, 4096, 8192, [&](Status st) {
    got = st;
    done = true;
  });
  exec_.run_until([&] { return done; });
  EXPECT_EQ(got.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine_->stats().errors, 1u);
}

TEST_F(EmulatedTransferTest, RegisteringHostMemoryIsOptionalAndReversible) {
  std::vector<uint8_t> buf(1 << 16);
  EXPECT_TRUE(engine_->register_host(buf.data(), buf.size()).is_ok());
  engine_->unregister_host(buf.data());
  EXPECT_EQ(engine_->register_host(nullptr, 0).code(), StatusCode::kInvalidArgument);
}

TEST_F(EmulatedTransferTest, AutoPicksEmulatedWithoutAGpu) {
  if (cuda_usable().is_ok()) GTEST_SKIP() << "a GPU is present";
  TransferEngineOptions o;  // kAuto
  auto e = make_transfer_engine(exec_, o).value();
  EXPECT_EQ(e->device_kind(), DeviceKind::kEmulated);
  EXPECT_EQ(e->device_description(), "emulated");
}

TEST(EmulatedTransferLink, CopiesTakeAtLeastTheirBytesAtTheLinkRate) {
  RealExecutor exec;
  TransferEngineOptions o;
  o.kind = TransferEngineKind::kEmulated;
  o.emulated_link_bytes_per_s = 1e9;  // 4 MiB in 4.19 ms, two in 8.39 ms
  auto engine = make_transfer_engine(exec, o).value();
  auto dst = engine->allocate(8 << 20).value();
  std::vector<uint8_t> src(8 << 20, 7);
  int done = 0;
  TimePoint start = exec.now();
  for (int i = 0; i < 2; ++i) {
    engine->copy_to_device(src.data() + i * (4 << 20), *dst, i * (4 << 20), 4 << 20,
                           [&](Status st) {
                             EXPECT_TRUE(st.is_ok());
                             ++done;
                           });
  }
  exec.run_until([&] { return done == 2; });
  EXPECT_GE(exec.now() - start, std::chrono::microseconds(8388));  // 8 MiB at 1e9 B/s
  EXPECT_EQ(dst->data()[(8 << 20) - 1], std::byte{7});
  o.emulated_link_bytes_per_s = -1;
  EXPECT_EQ(make_transfer_engine(exec, o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tempokv
