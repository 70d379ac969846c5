// The benches' fio helpers: the job that reads the same extents, and the rate of its output.
#include "tempokv/fio.h"

#include <gtest/gtest.h>

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

constexpr const char* kTwoJobs = R"(fio-3.33 note
{"jobs": [
  {"read": {"io_bytes": 1000000000, "total_ios": 10, "bw_bytes": 2000000000, "runtime": 500},
   "write": {"io_bytes": 0, "bw_bytes": 0}},
  {"read": {"io_bytes": 1000000000, "total_ios": 10, "bw_bytes": 2000000000, "runtime": 500},
   "write": {"io_bytes": 0, "bw_bytes": 0}}]})";

TEST(ParseFioOutput, SequentialJobsRateIsBytesOverSummedRuntime) {
  auto r = parse_fio_output(kTwoJobs, /*sequential_jobs=*/true);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->read_bytes, 2'000'000'000u);
  EXPECT_DOUBLE_EQ(r->read_runtime_s, 1.0);
  EXPECT_DOUBLE_EQ(r->read_bytes_per_s, 2e9);  // not the 4e9 their bandwidths sum to
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
