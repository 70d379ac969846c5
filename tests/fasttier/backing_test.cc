#include "fasttier/backing.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "common/units.h"
#include "fasttier/fast_tier.h"

namespace tempokv {
namespace {

FastTierOptions options(BackingKind kind) {
  FastTierOptions o;
  o.capacity_bytes = 4 * kMiB;
  o.protected_budget_bytes = 2 * kMiB;
  o.backing = kind;
  return o;
}

TEST(Backing, AnonymousMemoryIsWritableAndPageAligned) {
  auto b = make_backing(options(BackingKind::kAnonymous));
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  ASSERT_NE((*b)->base(), nullptr);
  EXPECT_TRUE(is_aligned((*b)->base(), kBlockBytes));
  std::memset((*b)->base(), 0xab, 4 * kMiB);
  EXPECT_EQ((*b)->fd(), -1);
}

TEST(Backing, MetadataOnlyHasNoMemory) {
  auto b = make_backing(options(BackingKind::kMetadata));
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ((*b)->base(), nullptr);
  EXPECT_EQ((*b)->size_bytes(), 4 * kMiB);
}

TEST(Backing, MemfdIsSharedThroughItsDescriptor) {
  auto b = make_backing(options(BackingKind::kMemfd));
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  ASSERT_GE((*b)->fd(), 0);
  // A second mapping of the descriptor (what another process would do) sees the same bytes.
  void* other = mmap(nullptr, 4 * kMiB, PROT_READ, MAP_SHARED, (*b)->fd(), 0);
  ASSERT_NE(other, MAP_FAILED);
  std::memcpy((*b)->base() + kMiB, "tempokv", 7);
  EXPECT_EQ(std::memcmp(static_cast<char*>(other) + kMiB, "tempokv", 7), 0);
  munmap(other, 4 * kMiB);
}

// Whether the hugetlb pool could hold `bytes` now (nr_hugepages of the default 2 MiB size).
bool hugetlb_pool_holds(uint64_t bytes) {
  FILE* f = std::fopen("/proc/sys/vm/nr_hugepages", "r");
  if (f == nullptr) return false;
  unsigned long pages = 0;
  bool read = std::fscanf(f, "%lu", &pages) == 1;
  std::fclose(f);
  return read && pages * 2 * kMiB >= bytes;
}

TEST(Backing, HugePageMemfdFallsBackToNormalPagesWithoutAHugetlbPool) {
  if (hugetlb_pool_holds(4 * kMiB)) GTEST_SKIP() << "a hugetlb pool is reserved here";
  FastTierOptions o = options(BackingKind::kMemfd);
  o.huge_pages = true;
  o.populate = true;
  auto b = make_backing(o);
  ASSERT_TRUE(b.is_ok()) << "no hugetlb pool must mean normal pages, not an error: "
                         << b.status().to_string();
  EXPECT_FALSE((*b)->huge_pages());
  ASSERT_GE((*b)->fd(), 0);
  std::memset((*b)->base(), 0x5a, 4 * kMiB);
}

TEST(Backing, HugePageAnonymousTierFallsBackToNormalPagesWithoutAHugetlbPool) {
  if (hugetlb_pool_holds(4 * kMiB)) GTEST_SKIP() << "a hugetlb pool is reserved here";
  FastTierOptions o = options(BackingKind::kAnonymous);
  o.huge_pages = true;
  auto b = make_backing(o);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_FALSE((*b)->huge_pages());
  std::memset((*b)->base(), 0x5a, 4 * kMiB);
}

TEST(Backing, FileMappingIsCreatedAtCapacity) {
  auto dir =
      std::filesystem::temp_directory_path() / ("tempokv-backing-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  FastTierOptions o = options(BackingKind::kFile);
  o.path = (dir / "arena").string();
  {
    auto b = make_backing(o);
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    std::memcpy((*b)->base(), "abc", 3);
    EXPECT_EQ(std::filesystem::file_size(o.path), 4 * kMiB);
  }
  std::filesystem::remove_all(dir);
}

// Pages of the mapping that are resident, by mincore().
size_t resident_pages(std::byte* base, size_t bytes) {
  std::vector<unsigned char> v(bytes / 4096);
  if (mincore(base, bytes, v.data()) != 0) return 0;
  size_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return n;
}

TEST(Backing, PopulatedSharedMemoryIsResidentAtCreation) {
  for (bool populate : {false, true}) {
    FastTierOptions o = options(BackingKind::kFile);
    o.path = "/dev/shm/tempokv-backing-populate-" + std::to_string(getpid());
    o.populate = populate;
    std::filesystem::remove(o.path);
    auto b = make_backing(o);
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    const size_t resident = resident_pages((*b)->base(), 4 * kMiB);
    if (populate) {
      EXPECT_EQ(resident, 4 * kMiB / 4096);
    } else {
      EXPECT_EQ(resident, 0u);
    }
    std::filesystem::remove(o.path);
  }
}

TEST(Backing, FastTierDataPointsIntoTheArena) {
  auto t = FastTier::create(options(BackingKind::kAnonymous));
  ASSERT_TRUE(t.is_ok());
  Key k{1, 2};
  auto off = (*t)->begin_fill(k, 8 * kBlockBytes);
  ASSERT_TRUE(off.is_ok());
  EXPECT_EQ((*t)->data(k), (*t)->backing().base() + *off);
  EXPECT_TRUE(is_aligned((*t)->data(k), kBlockBytes));
}

}  // namespace
}  // namespace tempokv
