#include "common/node_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <utility>

namespace tempokv {
namespace {

TEST(NodePool, AFreedBlockIsHandedOutAgainForTheSameSizeClass) {
  NodePool pool;
  void* a = pool.allocate(48, 8);
  pool.deallocate(a, 48, 8);
  EXPECT_EQ(pool.allocate(40, 8), a);  // 40 and 48 bytes share the 48-byte class
  void* b = pool.allocate(48, 8);
  EXPECT_NE(b, a);
  void* c = pool.allocate(64, 8);  // another class: not b's or a's block
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
  pool.deallocate(a, 40, 8);
  pool.deallocate(b, 48, 8);
  pool.deallocate(c, 64, 8);
  // Last freed, first handed out.
  void* again_b = pool.allocate(48, 8);
  void* again_a = pool.allocate(48, 8);
  EXPECT_EQ(again_b, b);
  EXPECT_EQ(again_a, a);
  pool.deallocate(again_b, 48, 8);
  pool.deallocate(again_a, 48, 8);
}

TEST(NodePool, LargeAndOveralignedBlocksAreNotPooled) {
  NodePool pool;
  void* big = pool.allocate(NodePool::kMaxPooled + 1, 8);
  std::memset(big, 0xab, NodePool::kMaxPooled + 1);
  pool.deallocate(big, NodePool::kMaxPooled + 1, 8);
  void* aligned = pool.allocate(64, 128);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(aligned) % 128, 0u);
  pool.deallocate(aligned, 64, 128);
  // The over-aligned block went back upstream, not to the 64-byte free list.
  void* small = pool.allocate(64, 8);
  EXPECT_NE(small, aligned);
  pool.deallocate(small, 64, 8);
}

TEST(NodePool, ASetOnThePoolMatchesOneOnTheHeapThroughRandomChurn) {
  NodePool pool;
  std::pmr::set<std::pair<int64_t, uint64_t>> pooled{&pool};
  std::set<std::pair<int64_t, uint64_t>> plain;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20'000; ++i) {
    const std::pair<int64_t, uint64_t> v{static_cast<int64_t>(rng() % 500), rng() % 4};
    if (rng() % 3 == 0) {
      EXPECT_EQ(pooled.erase(v), plain.erase(v));
    } else {
      EXPECT_EQ(pooled.insert(v).second, plain.insert(v).second);
    }
  }
  EXPECT_TRUE(std::equal(pooled.begin(), pooled.end(), plain.begin(), plain.end()));
}

}  // namespace
}  // namespace tempokv
