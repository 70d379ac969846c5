// fio as the benches' ceiling: pairs of a measured rate and fio beside it, and fio run for real
// over a file laid out as a store segment (skipped where fio is not installed).
#include "fio_ceiling.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include <gtest/gtest.h>

namespace tempokv::cli {
namespace {

TEST(FioPairs, RatiosAreTheMediansOfThePairsNotOfTheirMedians) {
  FioPairs p;
  FioCeiling a{1.0, 2.0, 8, "", "", {}}, b{2.0, 4.0, 32, "", "", {}}, c{1.0, 1.0, 32, "", "", {}};
  p.add(1.0, a);  // 0.5 of best, 1.0 of equal depth
  p.add(4.0, b);  // 1.0, 2.0
  p.add(0.9, c);  // 0.9, 0.9
  EXPECT_DOUBLE_EQ(p.ratio_vs_best(), 0.9);
  EXPECT_DOUBLE_EQ(p.ratio_vs_equal_depth(), 1.0);
  EXPECT_DOUBLE_EQ(p.best_gbps(), 2.0);
  EXPECT_DOUBLE_EQ(p.equal_depth_gbps(), 1.0);
  EXPECT_EQ(p.best_depth(), 32u);  // the depth that was best most often
}

TEST(FioCeilingOf, TheFirstRunIsTheReferenceAndTheFastestTheCeiling) {
  FioCeiling c = fio_ceiling_of({{4, 1.5, 100, "fio --iodepth=4"},
                                 {8, 2.5, 100, ""},
                                 {16, 3.0, 100, ""},
                                 {32, 3.0, 100, ""}});
  EXPECT_EQ(c.equal_depth_gbps, 1.5);
  EXPECT_EQ(c.command, "fio --iodepth=4");
  EXPECT_EQ(c.best_gbps, 3.0);
  EXPECT_EQ(c.best_depth, 16u);  // the earlier of the two equally fast
  EXPECT_EQ(c.rates,
            "depth 4: 1.50 GB/s, depth 8: 2.50 GB/s, depth 16: 3.00 GB/s, "
            "depth 32: 3.00 GB/s");
  ASSERT_EQ(c.runs.size(), 4u);
  // The path's depth may be the fastest.
  c = fio_ceiling_of({{8, 2.0, 100, ""}, {16, 1.0, 100, ""}});
  EXPECT_EQ(c.best_gbps, 2.0);
  EXPECT_EQ(c.best_depth, 8u);
}

bool fio_installed() { return std::system("fio --version >/dev/null 2>&1") == 0; }

class FioCeilingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fio_installed()) GTEST_SKIP() << "fio is not installed";
    dir_ = std::filesystem::temp_directory_path() / ("tkv-fio-ceiling-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    file_ = (dir_ / "seg").string();
    // A segment-like file: a 4 KiB header before each of eight 1 MiB payloads.
    int fd = open(file_.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    std::vector<char> block(kRecord, 'x');
    for (int i = 0; i < 8; ++i) ASSERT_EQ(write(fd, block.data(), block.size()), ssize_t(kRecord));
    close(fd);
    for (uint64_t i = 0; i < 8; ++i) reads_.push_back({file_, i * kRecord + 4096, kMiB});
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  static constexpr uint64_t kMiB = 1 << 20;
  static constexpr uint64_t kRecord = kMiB + 4096;
  std::filesystem::path dir_;
  std::string file_;
  std::vector<FioReadExtent> reads_;
};

TEST_F(FioCeilingTest, ReadsTheSameBytesAtEveryDepthOnHugePages) {
  Result<FioCeiling> c = run_fio_ceiling(reads_, 4);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  // Every depth, the path's first: each run read the eight payloads (fio's own count), skipping
  // the headers, on huge pages.
  ASSERT_EQ(c->runs.size(), 4u);
  const uint32_t depths[] = {4, 8, 16, 32};
  for (size_t i = 0; i < 4; ++i) {
    const FioDepthRun& run = c->runs[i];
    EXPECT_EQ(run.depth, depths[i]);
    EXPECT_EQ(run.read_bytes, 8 * kMiB) << run.depth;
    EXPECT_GT(run.gbps, 0) << run.depth;
    EXPECT_NE(run.command.find("--iodepth=" + std::to_string(run.depth)), std::string::npos)
        << run.command;
    EXPECT_NE(run.command.find("--rw=read:4096"), std::string::npos) << run.command;
    EXPECT_NE(run.command.find("GLIBC_TUNABLES=glibc.malloc.hugetlb=1"), std::string::npos)
        << run.command;
  }
  EXPECT_EQ(c->equal_depth_gbps, c->runs[0].gbps);
  EXPECT_EQ(c->command, c->runs[0].command);
}

TEST_F(FioCeilingTest, ScatteredReadsAreRefusedWithoutReplayAndReplayedAtDepthOneWithIt) {
  // 300 reads of 4 KiB, 12 KiB apart: more runs than fio takes jobs (fio.h).
  std::vector<FioReadExtent> scattered;
  for (uint64_t i = 0; i < 300; ++i) scattered.push_back({file_, i * 12288, 4096});
  FioCompareOptions no_replay;
  no_replay.allow_replay = false;
  no_replay.huge_pages = false;
  EXPECT_EQ(run_fio_ceiling(scattered, 8, no_replay).status().code(),
            StatusCode::kFailedPrecondition);
  Result<FioCeiling> c = run_fio_ceiling(scattered, 8);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ASSERT_EQ(c->runs.size(), 1u);
  EXPECT_EQ(c->runs[0].depth, 1u);
  EXPECT_EQ(c->runs[0].read_bytes, 300u * 4096);
  EXPECT_EQ(c->best_depth, 1u);
  EXPECT_NE(c->command.find("--read_iolog="), std::string::npos);
}

}  // namespace
}  // namespace tempokv::cli
