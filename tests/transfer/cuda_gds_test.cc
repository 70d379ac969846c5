// CUDA and GDS: run where a GPU (and libcufile) exist, skip cleanly elsewhere; the "unavailable"
// answers themselves are checked everywhere.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <numeric>

#include "restore_test_util.h"
#include "transfer/cufile_api.h"
#include "transfer/restore_verify.h"

namespace tempokv::testing {
namespace {

using GdsTest = RestoreFixture;

TEST_F(GdsTest, GdsIsUnavailableWithAnEmulatedDestination) {
  auto path = make_gds_restore_path(executor_, *transfer_, {16 << 20, 4});
  Status st = path->prepare();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("no GPU"), std::string::npos) << st.to_string();
}

TEST(CudaTransferTest, CopiesRoundTripThroughDeviceMemory) {
  if (Status st = cuda_usable(); !st.is_ok()) GTEST_SKIP() << st.to_string();
  RealExecutor exec;
  TransferEngineOptions o;
  o.kind = TransferEngineKind::kCuda;
  auto engine = make_transfer_engine(exec, o);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto dst = (*engine)->allocate(1 << 20).value();
  EXPECT_EQ(dst->kind(), DeviceKind::kCuda);
  std::vector<uint8_t> src(1 << 20);
  std::iota(src.begin(), src.end(), 0);
  ASSERT_TRUE((*engine)->register_host(src.data(), src.size()).is_ok());
  bool done = false;
  (*engine)->copy_to_device(src.data(), *dst, 0, src.size(), [&](Status st) {
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    done = true;
  });
  exec.run_until([&] { return done; });
  std::vector<uint8_t> back(src.size());
  ASSERT_TRUE((*engine)->copy_to_host(*dst, 0, back.data(), back.size()).is_ok());
  EXPECT_EQ(back, src);
  EXPECT_EQ((*engine)->stats().cpu_copies.host_copy_bytes, 0u);  // pinned: a DMA, not a copy
  (*engine)->unregister_host(src.data());
}

TEST(CudaTransferTest, ExplicitCudaWithoutAGpuIsUnavailable) {
  if (cuda_usable().is_ok()) GTEST_SKIP() << "a GPU is present";
  RealExecutor exec;
  TransferEngineOptions o;
  o.kind = TransferEngineKind::kCuda;
  auto engine = make_transfer_engine(exec, o);
  ASSERT_FALSE(engine.is_ok());
  EXPECT_EQ(engine.status().code(), StatusCode::kUnavailable);
}

TEST(GdsModeTest, CompatibilityModeWithoutNvidiaFsDirectWithIt) {
  auto dir =
      std::filesystem::temp_directory_path() / ("tempokv-gds-mode-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  EXPECT_EQ(detect_gds_mode(dir.string()), GdsMode::kCompat);
  EXPECT_NE(gds_mode_description(GdsMode::kCompat).find("compatibility"), std::string::npos);
  std::filesystem::create_directories(dir / "nvidia-fs");
  EXPECT_EQ(detect_gds_mode(dir.string()), GdsMode::kDirect);
  std::filesystem::remove_all(dir);
}

TEST_F(GdsTest, CompatibilityModeCountsTheHostBounce) {
  if (Status st = cuda_usable(); !st.is_ok()) GTEST_SKIP() << st.to_string();
  if (auto api = CuFileApi::load(); !api.is_ok()) GTEST_SKIP() << api.status().to_string();
  TransferEngineOptions o;
  o.kind = TransferEngineKind::kCuda;
  auto cuda = make_transfer_engine(executor_, o).value();
  auto keys = put_session({1 << 20, 1 << 20});
  auto session = RestoreSession::resolve(*store_, keys);
  ASSERT_TRUE(session.is_ok());
  auto path = make_gds_restore_path(executor_, *cuda, {16 << 20, 4});
  ASSERT_TRUE(path->prepare().is_ok());
  bool compat = detect_gds_mode() == GdsMode::kCompat;
  EXPECT_NE(path->detail().find(compat ? "compatibility" : "GPU-direct"), std::string::npos)
      << path->detail();
  auto dst = cuda->allocate(session->device_bytes()).value();
  ASSERT_TRUE(path->register_destination(*dst).is_ok());
  auto r = restore(*path, *session, *dst);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(path->stats().cpu_copies.host_copy_bytes, compat ? session->payload_bytes() : 0u)
      << "compatibility mode bounces every byte through host memory";
  path->unregister_destination(*dst);
  path->release();
}

TEST_F(GdsTest, GdsRestoresByteExactIntoCudaMemory) {
  if (Status st = cuda_usable(); !st.is_ok()) GTEST_SKIP() << st.to_string();
  if (auto api = CuFileApi::load(); !api.is_ok()) GTEST_SKIP() << api.status().to_string();
  TransferEngineOptions o;
  o.kind = TransferEngineKind::kCuda;
  auto cuda = make_transfer_engine(executor_, o).value();
  auto keys = put_session({64 * 1024, 40000, 1 << 20});
  auto session = RestoreSession::resolve(*store_, keys);
  ASSERT_TRUE(session.is_ok());
  auto path = make_gds_restore_path(executor_, *cuda, {16 << 20, 4});
  ASSERT_TRUE(path->prepare().is_ok());
  auto dst = cuda->allocate(session->device_bytes()).value();
  ASSERT_TRUE(path->register_destination(*dst).is_ok());
  auto r = restore(*path, *session, *dst);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(*r, session->payload_bytes());
  EXPECT_TRUE(verify_restored(*session, *dst, *cuda).is_ok());
  path->unregister_destination(*dst);
  path->release();
}

}  // namespace
}  // namespace tempokv::testing
