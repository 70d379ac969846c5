#include "tempokv/key.h"

#include <gtest/gtest.h>

#include <vector>

namespace tempokv {
namespace {

TEST(Key, RoundTripsThroughHex) {
  Key k{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  EXPECT_EQ(k.to_string(), "0123456789abcdeffedcba9876543210");
  EXPECT_EQ(Key::parse(k.to_string()), k);
  EXPECT_FALSE(Key::parse("xyz").has_value());
  EXPECT_FALSE(Key::parse("0123456789abcdeffedcba987654321g").has_value());
}

TEST(Key, ChainHashDependsOnThePrefix) {
  std::vector<uint32_t> a{1, 2, 3}, b{4, 5, 6};
  uint64_t ha = chain_hash(0, a);
  EXPECT_EQ(chain_hash(ha, b), chain_hash(chain_hash(0, a), b));
  EXPECT_NE(chain_hash(ha, b), chain_hash(chain_hash(0, b), b));
  EXPECT_NE(model_id("llama-3.1-8b"), model_id("qwen2.5-14b"));
}

}  // namespace
}  // namespace tempokv
