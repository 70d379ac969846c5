#include "fasttier/slot_allocator.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "common/units.h"

namespace tempokv {
namespace {

TEST(SlotAllocator, ChargesWholeSlots) {
  SlotAllocator a(64 * kMiB, 8 * kMiB);
  EXPECT_EQ(a.charge_bytes(1), 8 * kMiB);
  EXPECT_EQ(a.charge_bytes(8 * kMiB), 8 * kMiB);
  EXPECT_EQ(a.charge_bytes(8 * kMiB + 4096), 16 * kMiB);
}

TEST(SlotAllocator, OffsetsAreSlotMultiplesAndFreeRunsCoalesce) {
  SlotAllocator a(16 * kBlockBytes, kBlockBytes);
  std::vector<uint64_t> offs;
  for (int i = 0; i < 4; ++i) offs.push_back(*a.allocate(4 * kBlockBytes));
  EXPECT_EQ(offs, (std::vector<uint64_t>{0, 4 * kBlockBytes, 8 * kBlockBytes, 12 * kBlockBytes}));
  EXPECT_FALSE(a.allocate(kBlockBytes).has_value());
  a.free(offs[1], 4 * kBlockBytes);
  a.free(offs[2], 4 * kBlockBytes);
  EXPECT_EQ(a.free_runs(), 1u);
  EXPECT_EQ(a.largest_free_bytes(), 8 * kBlockBytes);
  EXPECT_EQ(*a.allocate(8 * kBlockBytes), 4 * kBlockBytes);
}

TEST(SlotAllocator, BestFitPrefersTheSmallestRunThatFits) {
  SlotAllocator a(10 * kBlockBytes, kBlockBytes);
  uint64_t x = *a.allocate(kBlockBytes);      // [0]
  uint64_t y = *a.allocate(2 * kBlockBytes);  // [1,2]
  uint64_t z = *a.allocate(kBlockBytes);      // [3]
  (void)x;
  a.free(y, 2 * kBlockBytes);  // free runs: [1,2] and [4..9]
  EXPECT_EQ(*a.allocate(2 * kBlockBytes), y);
  (void)z;
}

// The chunk-slot guarantee: any object of at most one slot fits while any slot is free, whatever
// the history of allocations and frees.
TEST(SlotAllocator, SingleSlotObjectsNeverFailWhileASlotIsFree) {
  const uint64_t slot = 32 * kMiB;
  SlotAllocator a(100 * slot, slot);
  std::mt19937_64 rng(7);
  std::vector<std::pair<uint64_t, uint64_t>> live;
  for (int step = 0; step < 20000; ++step) {
    bool alloc = live.empty() || (live.size() < 100 && rng() % 2 == 0);
    if (alloc) {
      uint64_t bytes = (rng() % 2 == 0) ? slot : (rng() % (slot / kBlockBytes) + 1) * kBlockBytes;
      auto off = a.allocate(bytes);
      ASSERT_TRUE(off.has_value()) << "step " << step << " free " << a.free_bytes();
      live.emplace_back(*off, bytes);
    } else {
      size_t i = rng() % live.size();
      a.free(live[i].first, live[i].second);
      live[i] = live.back();
      live.pop_back();
    }
    ASSERT_EQ(a.free_bytes(), (100 - live.size()) * slot);
  }
}

// The page-granular guarantee for equal sizes: with 4 KiB slots and every object C bytes, an
// allocation fails only when fewer than C bytes are free.
TEST(SlotAllocator, EqualSizesNeverFragmentPageGranularArena) {
  const uint64_t c = 12 * kBlockBytes;
  const uint64_t arena = 50 * c + 5 * kBlockBytes;  // not a multiple of C
  SlotAllocator a(arena, kBlockBytes);
  std::mt19937_64 rng(11);
  std::vector<uint64_t> live;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 2 == 0) {
      uint64_t free = a.free_bytes();
      auto off = a.allocate(c);
      ASSERT_EQ(off.has_value(), free >= c) << "step " << step << ", free " << free;
      if (off) {
        EXPECT_EQ(*off % c, 0u);
        live.push_back(*off);
      }
    } else {
      size_t i = rng() % live.size();
      a.free(live[i], c);
      live[i] = live.back();
      live.pop_back();
    }
  }
}

}  // namespace
}  // namespace tempokv
