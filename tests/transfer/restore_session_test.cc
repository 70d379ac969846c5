#include "transfer/restore_session.h"

#include "restore_test_util.h"

namespace tempokv::testing {
namespace {

using RestoreSessionTest = RestoreFixture;

TEST_F(RestoreSessionTest, LaysChunksOutAtAlignedDeviceOffsets) {
  auto keys = put_session({8192, 10000, 4096});
  auto s = RestoreSession::resolve(*store_, keys);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  ASSERT_EQ(s->extents().size(), 3u);
  EXPECT_EQ(s->extents()[0].device_offset, 0u);
  EXPECT_EQ(s->extents()[1].device_offset, 8192u);
  EXPECT_EQ(s->extents()[1].read_bytes, 12288u);
  EXPECT_EQ(s->extents()[2].device_offset, 8192u + 12288u);
  EXPECT_EQ(s->device_bytes(), 8192u + 12288u + 4096u);
  EXPECT_EQ(s->payload_bytes(), 8192u + 10000u + 4096u);
  EXPECT_FALSE(s->files().empty());
}

TEST_F(RestoreSessionTest, MissingChunkIsNotFoundNamingItsPosition) {
  auto keys = put_session({4096, 4096});
  keys.insert(keys.begin() + 1, Key{42, 999999});
  auto s = RestoreSession::resolve(*store_, keys);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("chunk 1"), std::string::npos) << s.status().to_string();
}

TEST_F(RestoreSessionTest, EmptySessionIsInvalid) {
  auto s = RestoreSession::resolve(*store_, std::vector<Key>{});
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tempokv::testing
