#include "common/model_geometry.h"

#include <gtest/gtest.h>

namespace tempokv {
namespace {

TEST(ModelGeometryTest, BytesPerTokenMatchesThePublishedGeometry) {
  EXPECT_EQ(find_model_geometry("llama-3.1-8b")->bytes_per_token(), 128u * 1024);
  EXPECT_EQ(find_model_geometry("qwen2.5-14b")->bytes_per_token(), 192u * 1024);
  EXPECT_EQ(find_model_geometry("qwen3-coder-30b-a3b")->bytes_per_token(), 96u * 1024);
}

TEST(ModelGeometryTest, SeedSessionIsRoughlyNineGigabytes) {
  // Seed 000: ~100K tokens of Qwen3-Coder-30B-A3B, "roughly 9 GB of KV state per session".
  uint64_t bytes = 100'000 * find_model_geometry("Qwen3-Coder-30B-A3B")->bytes_per_token();
  EXPECT_EQ(bytes, 9'830'400'000u);
}

TEST(ModelGeometryTest, UnknownModelListsTheKnownOnes) {
  auto r = find_model_geometry("gpt-5");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("llama-3.1-8b"), std::string::npos);
}

}  // namespace
}  // namespace tempokv
