// Opening a store never loses data by accident: a smaller capacity is refused unless the caller
// asks for reclamation, inspection opens read-only (no writes, no reclamation, no lock stealing),
// and verify refuses a directory a writer holds.
#include <gtest/gtest.h>

#include <filesystem>

#include "store/format.h"
#include "store_test_util.h"

namespace tempokv::testing {
namespace {

bool mentions(const Status& st, const std::string& text) {
  return st.message().find(text) != std::string::npos;
}

class StoreInspectTest : public SmallStoreTest {
 protected:
  void SetUp() override {
    SmallStoreTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(fill_six_segments(h_, dir_.path()));
  }
};

TEST_F(StoreInspectTest, ReopenWithSmallerCapacityIsRefusedNamingBothSizes) {
  ASSERT_TRUE(h_.close().is_ok());
  h_.options.capacity_bytes = 2 * kMiB;
  Status st = h_.reopen();
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(mentions(st, std::to_string(6 * kMiB))) << st.to_string();
  EXPECT_TRUE(mentions(st, std::to_string(2 * kMiB))) << st.to_string();
  EXPECT_EQ(segment_file_count(dir_.path()), 6u);
}

TEST_F(StoreInspectTest, ReopenWithSmallerCapacityReclaimsOnlyWhenAsked) {
  ASSERT_TRUE(h_.close().is_ok());
  h_.options.capacity_bytes = 2 * kMiB;
  h_.options.reclaim_at_open = true;
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_EQ(segment_file_count(dir_.path()), 2u);
  EXPECT_EQ(h_.store->stats().reclaimed_segments, 4u);
  EXPECT_TRUE(h_.check_seeded(16, 300 * kKiB));
}

TEST_F(StoreInspectTest, ReadOnlyOpenNeitherReclaimsNorWrites) {
  ASSERT_TRUE(h_.close().is_ok());
  auto before = std::filesystem::last_write_time(dir_.path() + "/" + store::segment_file_name(6));
  h_.options.capacity_bytes = 2 * kMiB;
  h_.options.read_only = true;
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_EQ(h_.store->list().size(), 17u);
  EXPECT_TRUE(h_.check_seeded(0, 300 * kKiB));
  Status put = h_.put_seeded(99, 1000);
  EXPECT_EQ(put.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(mentions(put, "read-only")) << put.to_string();
  EXPECT_EQ(h_.remove(test_key(1)).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(h_.close().is_ok());
  EXPECT_EQ(segment_file_count(dir_.path()), 6u);
  EXPECT_EQ(std::filesystem::last_write_time(dir_.path() + "/" + store::segment_file_name(6)),
            before);
}

TEST_F(StoreInspectTest, ReadOnlyOpenLeavesAnInterruptedSegmentCreationInPlace) {
  ASSERT_TRUE(h_.close().is_ok());
  std::string partial = dir_.path() + "/" + store::segment_file_name(7);
  {
    int fd = ::open(partial.c_str(), O_CREAT | O_RDWR, 0644);
    ASSERT_EQ(fallocate(fd, 0, 0, 1 * kMiB), 0);  // created, header never written
    ::close(fd);
  }
  h_.options.read_only = true;
  ASSERT_TRUE(h_.reopen().is_ok());
  EXPECT_TRUE(std::filesystem::exists(partial));
  h_.options.read_only = false;
  ASSERT_TRUE(h_.reopen().is_ok());  // a writer finishes the recovery
  EXPECT_FALSE(std::filesystem::exists(partial));
}

TEST_F(StoreInspectTest, ReadOnlyOpenOfAStoreAWriterHoldsIsRefused) {
  StoreOptions o = h_.options;
  o.read_only = true;
  auto second = Store::open(h_.ex, *h_.engine, o);
  ASSERT_FALSE(second.is_ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(mentions(second.status(), "LOCK")) << second.status().to_string();
}

TEST_F(StoreInspectTest, WriterCannotOpenWhileAnInspectorHoldsTheStore) {
  ASSERT_TRUE(h_.close().is_ok());
  h_.options.read_only = true;
  ASSERT_TRUE(h_.reopen().is_ok());
  StoreOptions o = h_.options;
  o.read_only = false;
  auto writer = Store::open(h_.ex, *h_.engine, o);
  ASSERT_FALSE(writer.is_ok());
  EXPECT_EQ(writer.status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(StoreInspectTest, VerifyOfAStoreAWriterHoldsIsRefused) {
  auto report = verify_store_dir(dir_.path());
  ASSERT_FALSE(report.is_ok());
  EXPECT_EQ(report.status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(h_.close().is_ok());
  report = verify_store_dir(dir_.path());
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  EXPECT_EQ(report->good, 17u);
}

TEST(StoreOptionsDefaultsTest, DefaultsPassTheirOwnValidation) {
  StoreOptions o;
  o.dir = "/var/tmp/x";
  EXPECT_TRUE(o.validate().is_ok()) << o.validate().to_string();
  StoreOptions sim;
  sim.simulated = true;
  EXPECT_TRUE(sim.validate().is_ok()) << sim.validate().to_string();
}

}  // namespace
}  // namespace tempokv::testing
