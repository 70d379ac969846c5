#include "common/checksum.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <random>
#include <vector>

namespace tempokv {
namespace {

Hash128 library(const void* p, size_t n) {
  XXH128_hash_t h = XXH3_128bits(p, n);
  return {h.low64, h.high64};
}

std::vector<unsigned char> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

TEST(Checksum, OnThisCpuTheFastestVariantIsChosen) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) {
    EXPECT_EQ(xxh3_variant(), "avx2");
    return;
  }
#endif
  EXPECT_EQ(xxh3_variant(), "libxxhash");
}

// XXH3 takes different code paths by length (0, 1-3, 4-8, 9-16, 17-128, 129-240, long inputs by
// stripe and block), so every boundary is crossed, at every misalignment of the start.
TEST(Checksum, EqualsTheSystemLibraryAtEveryLengthClassAndAlignment) {
  std::vector<unsigned char> data = random_bytes(3 * 1024 * 1024 + 77, 7);
  std::vector<size_t> lengths = {0,    1,    3,    4,    8,    9,    16,   17,   128,
                                 129,  240,  241,  255,  256,  1023, 1024, 1025, 4096,
                                 8191, 65536, 1024 * 1024 + 13, 3 * 1024 * 1024};
  for (size_t len : lengths) {
    for (size_t align : {0, 1, 7, 31, 64}) {
      const unsigned char* p = data.data() + align;
      ASSERT_EQ(xxh3_128(p, len), library(p, len)) << "length " << len << " at +" << align;
    }
  }
}

TEST(Checksum, AStreamOverRandomPiecesEqualsTheOneShotHash) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    size_t n = rng() % (2 * 1024 * 1024);
    std::vector<unsigned char> data = random_bytes(n, static_cast<uint32_t>(trial));
    Xxh3Stream s;
    size_t at = 0;
    while (at < n) {
      size_t piece = std::min<size_t>(n - at, (rng() % 3 == 0) ? rng() % 300 : rng() % 300000);
      s.update(data.data() + at, piece);
      at += piece;
    }
    ASSERT_EQ(s.digest(), library(data.data(), n)) << "trial " << trial << ", " << n << " bytes";
  }
}

}  // namespace
}  // namespace tempokv
