// The benches' fio helpers: the job that reads the same extents, and the rate of its output.
#include "tempokv/fio.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace tempokv::cli {
namespace {

TEST(FioJobForExtents, BackToBackRecordsBecomeOneStreamPerRun) {
  // Two files; in "a" two runs of 1 MiB payloads 4 KiB apart, broken by a gap.
  const uint64_t mib = 1 << 20;
  std::vector<FioReadExtent> reads{{"a", 8192 + (mib + 4096), mib},
                                   {"a", 8192, mib},
                                   {"a", 100 * mib, mib},
                                   {"b", 8192, mib}};
  auto job = fio_job_for_extents(reads, 4096, 8);
  ASSERT_TRUE(job.is_ok()) << job.status().to_string();
  EXPECT_EQ(job->rw, "read:4096");
  EXPECT_EQ(job->block_bytes, mib);
  EXPECT_EQ(job->iodepth, 8u);
  ASSERT_EQ(job->ranges.size(), 3u);
  EXPECT_EQ(job->ranges[0].path, "a");
  EXPECT_EQ(job->ranges[0].offset_bytes, 8192u);
  EXPECT_EQ(job->ranges[0].size_bytes, 2 * mib + 4096);  // two payloads and the header between
  EXPECT_EQ(job->ranges[1].offset_bytes, 100 * mib);
  EXPECT_EQ(job->ranges[2].path, "b");
}

TEST(FioJobForExtents, ShortFinalChunkGetsARangeOfItsOwnSizeAtTheSameDepth) {
  // A session of two 1 MiB chunks and a 12 KiB final one, records back to back: no replay (which
  // fio can only run at depth 1), the short read is a job of its own request size.
  const uint64_t mib = 1 << 20;
  std::vector<FioReadExtent> reads{{"a", 4096, mib},
                                   {"a", 4096 + (mib + 4096), mib},
                                   {"a", 4096 + 2 * (mib + 4096), 12288}};
  auto job = fio_job_for_extents(reads, 4096, 16);
  ASSERT_TRUE(job.is_ok()) << job.status().to_string();
  EXPECT_TRUE(job->read_iolog.empty());
  EXPECT_EQ(job->iodepth, 16u);
  EXPECT_EQ(job->block_bytes, mib);
  ASSERT_EQ(job->ranges.size(), 2u);
  EXPECT_EQ(job->ranges[0].size_bytes, 2 * mib + 4096);
  EXPECT_EQ(job->ranges[0].block_bytes, 0u);  // the job's --bs
  EXPECT_EQ(job->ranges[1].offset_bytes, 4096 + 2 * (mib + 4096));
  EXPECT_EQ(job->ranges[1].size_bytes, 12288u);
  EXPECT_EQ(job->ranges[1].block_bytes, 12288u);
  EXPECT_EQ(fio_job_for_extents({}, 4096, 1).status().code(), StatusCode::kInvalidArgument);
}

TEST(FioJobForExtents, ChunksLargerThanTheRequestAreOneStridedStreamAtTheDepth) {
  // Three records of 4 MiB read in 1 MiB requests (a chunk larger than --max-request, or gds's
  // 16 MiB reads of 96 MiB chunks): the pieces of a record are back to back. They were one fio
  // job each, run one after another: depth 1 whatever the depth asked. Now one stream skipping
  // the headers, at depth 8.
  const uint64_t mib = 1 << 20, record = 4 * mib + 4096;
  std::vector<FioReadExtent> reads;
  for (uint64_t r = 0; r < 3; ++r) {
    for (uint64_t p = 0; p < 4; ++p) reads.push_back({"a", 4096 + r * record + p * mib, mib});
  }
  auto job = fio_job_for_extents(reads, 4096, 8);
  ASSERT_TRUE(job.is_ok()) << job.status().to_string();
  EXPECT_EQ(job->iodepth, 8u);
  EXPECT_EQ(job->block_bytes, mib);
  ASSERT_EQ(job->ranges.size(), 1u);
  EXPECT_EQ(job->ranges[0].offset_bytes, 4096u);
  EXPECT_EQ(job->ranges[0].zone_bytes, 4 * mib);
  EXPECT_EQ(job->ranges[0].zone_skip_bytes, 4096u);
  EXPECT_EQ(job->ranges[0].io_bytes, 12 * mib);
  EXPECT_EQ(job->ranges[0].size_bytes, 3 * record - 4096);
}

TEST(FioJobForExtents, ChunksNotAMultipleOfTheRequestAreOneStreamOfEqualRequests) {
  // Three 3 MiB records read as 2 + 1 MiB (a 24 MiB chunk at a 16 MiB --max-request, a session's
  // last gds chunk), then a 1 MiB final record: one strided stream of 1.5 MiB requests at the
  // depth, and the short record a job of its own. Unequal pieces made every piece a job of its
  // own, run one after another at one request each.
  const uint64_t mib = 1 << 20, record = 3 * mib + 4096;
  std::vector<FioReadExtent> reads;
  for (uint64_t r = 0; r < 3; ++r) {
    reads.push_back({"a", 4096 + r * record, 2 * mib});
    reads.push_back({"a", 4096 + r * record + 2 * mib, mib});
  }
  reads.push_back({"a", 4096 + 3 * record, mib});
  auto job = fio_job_for_extents(reads, 4096, 8);
  ASSERT_TRUE(job.is_ok()) << job.status().to_string();
  EXPECT_EQ(job->iodepth, 8u);
  EXPECT_EQ(job->block_bytes, 3 * mib / 2);
  ASSERT_EQ(job->ranges.size(), 2u);
  EXPECT_EQ(job->ranges[0].zone_bytes, 3 * mib);
  EXPECT_EQ(job->ranges[0].io_bytes, 9 * mib);
  EXPECT_EQ(job->ranges[0].block_bytes, 0u);
  EXPECT_EQ(job->ranges[1].offset_bytes, 4096 + 3 * record);
  EXPECT_EQ(job->ranges[1].size_bytes, mib);
  EXPECT_EQ(job->ranges[1].block_bytes, mib);
  EXPECT_EQ(job->ranges[1].zone_bytes, 0u);
  // A record no equal requests of whole blocks can split (5 blocks in 2 or 3 requests... 5 is
  // prime and 4 requests is over twice the path's 2).
  std::vector<FioReadExtent> odd{{"a", 4096, 4 * 4096}, {"a", 5 * 4096, 4096}};
  EXPECT_EQ(fio_job_for_extents(odd, 4096, 8).status().code(), StatusCode::kFailedPrecondition);
}

TEST(FioJobForExtents, FioKeepsTheDepthWhenChunksAreLargerThanTheRequest) {
  if (std::system("fio --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "fio is not installed";
  // 64 records of 96 KiB, each read as 64 + 32 KiB: fio's own count of I/Os in flight at
  // submission says most went at depth 8.
  const uint64_t kib = 1024, record = 96 * kib + 4096;
  const std::string file = ::testing::TempDir() + "tkv-fio-depth-" + std::to_string(getpid());
  {
    std::ofstream out(file, std::ios::binary);
    out << std::string(64 * record, 'x');
  }
  std::vector<FioReadExtent> reads;
  for (uint64_t r = 0; r < 64; ++r) {
    reads.push_back({file, 4096 + r * record, 64 * kib});
    reads.push_back({file, 4096 + r * record + 64 * kib, 32 * kib});
  }
  auto job = fio_job_for_extents(reads, 4096, 8);
  ASSERT_TRUE(job.is_ok()) << job.status().to_string();
  job->huge_pages = false;
  auto r = run_fio(*job);
  std::remove(file.c_str());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->read_bytes, 64 * 96 * kib) << r->command;
  EXPECT_EQ(r->read_ios, 128u) << r->command;
  EXPECT_GT(r->share_at_depth(8), 0.5) << r->command;
}

TEST(FioJobForExtents, FioReadsExactlyTheStridedPiecesAtTheDepth) {
  if (std::system("fio --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "fio is not installed";
  const uint64_t mib = 1 << 20, record = 2 * mib + 4096;
  const std::string file = ::testing::TempDir() + "tkv-fio-strided-" + std::to_string(getpid());
  {
    std::ofstream out(file, std::ios::binary);
    std::string block(record, 'x');
    for (int i = 0; i < 4; ++i) out << block;
  }
  std::vector<FioReadExtent> reads;
  for (uint64_t r = 0; r < 4; ++r) {
    for (uint64_t p = 0; p < 4; ++p) {
      reads.push_back({file, 4096 + r * record + p * (mib / 2), mib / 2});
    }
  }
  auto job = fio_job_for_extents(reads, 4096, 8);
  ASSERT_TRUE(job.is_ok()) << job.status().to_string();
  job->huge_pages = false;
  auto r = run_fio(*job);
  std::remove(file.c_str());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->read_bytes, 8 * mib) << r->command;
  EXPECT_EQ(r->read_ios, 16u) << r->command;
  EXPECT_NE(r->command.find("--iodepth=8"), std::string::npos) << r->command;
  EXPECT_NE(r->command.find("--zonemode=strided"), std::string::npos) << r->command;
  EXPECT_EQ(r->command.find("--name=", r->command.find("--name=") + 1), std::string::npos)
      << "more than one job: " << r->command;
}

constexpr const char* kTwoJobs = R"(fio-3.33 note
{"jobs": [
  {"read": {"io_bytes": 1000000000, "total_ios": 10, "bw_bytes": 2000000000, "runtime": 500},
   "write": {"io_bytes": 0, "bw_bytes": 0},
   "iodepth_level": {"1": 100.0, "2": 0.0, "4": 0.0, "8": 0.0, ">=64": 0.0}},
  {"read": {"io_bytes": 1000000000, "total_ios": 30, "bw_bytes": 2000000000, "runtime": 500},
   "write": {"io_bytes": 0, "bw_bytes": 0},
   "iodepth_level": {"1": 0.0, "2": 0.0, "4": 50.0, "8": 50.0, ">=64": 0.0}}]})";

TEST(ParseFioOutput, SequentialJobsRateIsBytesOverSummedRuntime) {
  auto r = parse_fio_output(kTwoJobs, /*sequential_jobs=*/true);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->read_bytes, 2'000'000'000u);
  EXPECT_EQ(r->read_ios, 40u);
  EXPECT_DOUBLE_EQ(r->read_runtime_s, 1.0);
  EXPECT_DOUBLE_EQ(r->read_bytes_per_s, 2e9);  // not the 4e9 their bandwidths sum to
}

TEST(ParseFioOutput, DepthSharesAreWeightedByEachJobsIos) {
  auto r = parse_fio_output(kTwoJobs, /*sequential_jobs=*/true);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_DOUBLE_EQ(r->share_at_depth(1), 1.0);
  EXPECT_DOUBLE_EQ(r->share_at_depth(4), 0.75);   // 30 of 40 I/Os at 4 or more
  EXPECT_DOUBLE_EQ(r->share_at_depth(12), 0.375);  // depth 12 is in the 8 bucket
  EXPECT_DOUBLE_EQ(r->share_at_depth(64), 0.0);
}

TEST(ParseFioOutput, ConcurrentJobsBandwidthsAddUp) {
  auto r = parse_fio_output(kTwoJobs, /*sequential_jobs=*/false);
  ASSERT_TRUE(r.is_ok());
  EXPECT_DOUBLE_EQ(r->read_bytes_per_s, 4e9);
  EXPECT_DOUBLE_EQ(r->read_runtime_s, 0.5);
  EXPECT_EQ(parse_fio_output("no json here", false).status().code(), StatusCode::kIOError);
}

}  // namespace
}  // namespace tempokv::cli
