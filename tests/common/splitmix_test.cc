#include "common/splitmix.h"

#include <gtest/gtest.h>

namespace tempokv {
namespace {

// The reference sequence (Vigna's splitmix64.c from seed 0): synthetic prompts, and so every
// stored chunk key of a sim or bench run, depend on it.
TEST(Splitmix64, GivesTheReferenceSequence) {
  uint64_t state = 0;
  EXPECT_EQ(splitmix64(state), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(splitmix64(state), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(splitmix64(state), 0x06c45d188009454fULL);
  EXPECT_EQ(state, 3 * 0x9e3779b97f4a7c15ULL);
}

TEST(Uniform01, StaysInTheUnitInterval) {
  uint64_t state = 42;
  for (int i = 0; i < 10'000; ++i) {
    const double u = uniform01(state);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

}  // namespace
}  // namespace tempokv
