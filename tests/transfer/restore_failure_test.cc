// Restores that cannot succeed say why, and leave the path reusable.
#include "restore_test_util.h"
#include "ssd/fault_injecting_engine.h"
#include "transfer/restore_verify.h"

namespace tempokv::testing {
namespace {

using RestoreFailureTest = RestoreFixture;

TEST_F(RestoreFailureTest, ReadErrorIsReportedAndTheSlotsComeBack) {
  auto keys = put_session({64 * 1024, 64 * 1024, 64 * 1024, 64 * 1024});
  auto session = RestoreSession::resolve(*store_, keys);
  ASSERT_TRUE(session.is_ok());
  FaultInjectingEngine faulty(executor_, engine_for("direct"));
  faulty.fail_nth_read(2);
  auto path = make_direct_restore_path(executor_, faulty, *transfer_, {16 * 1024, 4});
  ASSERT_TRUE(path->prepare().is_ok());
  auto dst = transfer_->allocate(session->device_bytes()).value();

  auto r = restore(*path, *session, *dst);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIOError) << r.status().to_string();
  EXPECT_EQ(path->stats().failures, 1u);
  EXPECT_EQ(faulty.stats().in_flight, 0u);  // every read finished before the callback

  // The same path restores the session once the fault is gone: every slot was returned.
  auto again = restore(*path, *session, *dst);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_TRUE(verify_restored(*session, *dst, *transfer_).is_ok());
  path->release();
  EXPECT_EQ(path->stats().staging_bytes, 0u);
}

TEST_F(RestoreFailureTest, ShortReadIsAnIOError) {
  auto keys = put_session({64 * 1024});
  auto session = RestoreSession::resolve(*store_, keys);
  ASSERT_TRUE(session.is_ok());
  FaultInjectingEngine faulty(executor_, engine_for("odirect-bounce"));
  faulty.short_transfer_next(1, FaultInjectingEngine::kReads);
  auto path = make_odirect_bounce_restore_path(executor_, faulty, *transfer_, {64 * 1024, 1});
  ASSERT_TRUE(path->prepare().is_ok());
  auto dst = transfer_->allocate(session->device_bytes()).value();
  auto r = restore(*path, *session, *dst);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("short read"), std::string::npos) << r.status().to_string();
}

TEST_F(RestoreFailureTest, UnalignedSlotSizeIsRejectedAtPrepare) {
  auto ssd = engine_for("direct");
  auto path = make_direct_restore_path(executor_, *ssd, *transfer_, {5000, 2});
  Status st = path->prepare();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("slot_bytes"), std::string::npos) << st.to_string();
}

TEST_F(RestoreFailureTest, DeviceBufferTooSmallIsRejected) {
  auto keys = put_session({64 * 1024, 8192});
  auto session = RestoreSession::resolve(*store_, keys);
  ASSERT_TRUE(session.is_ok());
  auto ssd = engine_for("direct");
  auto path = make_direct_restore_path(executor_, *ssd, *transfer_, {64 * 1024, 2});
  ASSERT_TRUE(path->prepare().is_ok());
  auto dst = transfer_->allocate(64 * 1024).value();
  auto r = restore(*path, *session, *dst);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("too small"), std::string::npos) << r.status().to_string();
}

TEST_F(RestoreFailureTest, BufferedEngineUnderAnODirectPathIsRejected) {
  auto ssd = engine_for("posix");  // buffered
  auto path = make_direct_restore_path(executor_, *ssd, *transfer_, {64 * 1024, 2});
  Status st = path->prepare();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("O_DIRECT"), std::string::npos) << st.to_string();
}

TEST_F(RestoreFailureTest, RestoreBeforePrepareFails) {
  auto keys = put_session({4096});
  auto session = RestoreSession::resolve(*store_, keys);
  auto ssd = engine_for("direct");
  auto path = make_direct_restore_path(executor_, *ssd, *transfer_, {64 * 1024, 2});
  auto dst = transfer_->allocate(4096).value();
  auto r = restore(*path, *session, *dst);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tempokv::testing
