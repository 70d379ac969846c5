// Bad arguments give errors that name the problem.
#include <gtest/gtest.h>

#include "store_test_util.h"

namespace tempokv::testing {
namespace {

class StoreArgsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    if (!dir_.supports_direct()) GTEST_SKIP() << dir_.path() << " does not support O_DIRECT";
    ASSERT_TRUE(h_.start(small_options(dir_.path())).is_ok());
    ASSERT_TRUE(h_.put_seeded(1, 10000).is_ok());
  }
  TempDir dir_;
  StoreHarness h_;
};

bool mentions(const Status& st, const std::string& text) {
  return st.message().find(text) != std::string::npos;
}

TEST_F(StoreArgsTest, UnalignedDestinationIsInvalidArgument) {
  auto buf = AlignedBuffer::allocate(5 * kBlockBytes);
  Result<size_t> r = h_.get(test_key(1), buf->data() + 512, 3 * kBlockBytes);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(mentions(r.status(), "not 4 KiB-aligned")) << r.status().to_string();
}

TEST_F(StoreArgsTest, TooSmallDestinationIsInvalidArgument) {
  auto buf = AlignedBuffer::allocate(2 * kBlockBytes);
  Result<size_t> r = h_.get(test_key(1), buf->data(), 2 * kBlockBytes);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(mentions(r.status(), "smaller than 12288")) << r.status().to_string();
}

TEST_F(StoreArgsTest, UnknownKeyIsNotFound) {
  auto buf = AlignedBuffer::allocate(kBlockBytes);
  Result<size_t> r = h_.get(test_key(99), buf->data(), buf->size());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(mentions(r.status(), test_key(99).to_string()));
}

TEST_F(StoreArgsTest, EmptyPayloadIsInvalidArgument) {
  char c = 0;
  Status st = h_.put(test_key(2), &c, 0);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(mentions(st, "empty payload"));
}

TEST_F(StoreArgsTest, OversizedObjectIsInvalidArgument) {
  std::vector<uint8_t> big(h_.options.max_object_bytes + 1);
  Status st = h_.put(test_key(2), big.data(), big.size());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(mentions(st, "exceeds max_object_bytes"));
}

TEST_F(StoreArgsTest, NullDataOutsideSimulationIsInvalidArgument) {
  Status st = h_.put(test_key(2), nullptr, 100);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(mentions(st, "null"));
}

TEST_F(StoreArgsTest, RemoveOfUnknownKeyIsNotFound) {
  EXPECT_EQ(h_.remove(test_key(42)).code(), StatusCode::kNotFound);
}

TEST_F(StoreArgsTest, FailedCallsAreCounted) {
  char c = 0;
  (void)h_.put(test_key(2), &c, 0);
  auto buf = AlignedBuffer::allocate(kBlockBytes);
  (void)h_.get(test_key(99), buf->data(), buf->size());
  EXPECT_EQ(h_.store->stats().failed_puts, 1u);
  EXPECT_EQ(h_.store->stats().failed_gets, 1u);
}

TEST(StoreOptionsTest, ValidateNamesTheBadField) {
  StoreOptions o;
  o.dir = "/tmp/x";
  o.segment_bytes = 1000;
  EXPECT_TRUE(mentions(o.validate(), "segment_bytes"));
  o.segment_bytes = 1 * kMiB;
  o.max_object_bytes = 1 * kMiB;
  EXPECT_TRUE(mentions(o.validate(), "max_object_bytes"));
  o.max_object_bytes = 64 * kKiB;
  o.capacity_bytes = 4096;
  EXPECT_TRUE(mentions(o.validate(), "capacity_bytes"));
  o.capacity_bytes = 4 * kMiB;
  EXPECT_TRUE(o.validate().is_ok());
  o.dir.clear();
  EXPECT_TRUE(mentions(o.validate(), "dir"));
}

}  // namespace
}  // namespace tempokv::testing
