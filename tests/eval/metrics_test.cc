// The evaluation's metrics (DESIGN.md §5) on hand-made values and timelines.
#include <gtest/gtest.h>

#include "common/units.h"
#include "eval/metrics.h"

namespace tempokv {
namespace {

TimePoint at_ms(int64_t ms) { return TimePoint(std::chrono::milliseconds(ms)); }

RequestRecord record(uint64_t id, int64_t arrival_ms, int64_t first_ms, int64_t finish_ms,
                     uint32_t tokens) {
  RequestRecord r;
  r.id = id;
  r.arrival = at_ms(arrival_ms);
  r.first_token = at_ms(first_ms);
  r.finished = at_ms(finish_ms);
  r.output_tokens = tokens;
  return r;
}

TEST(RunMetrics, ThroughputCountsCompletedTokensOverFirstSubmissionToLastCompletion) {
  std::vector<RequestRecord> recs{record(1, 1000, 1500, 3000, 10), record(2, 2000, 2200, 5000, 30)};
  RequestRecord unfinished;
  unfinished.id = 3;
  unfinished.arrival = at_ms(4000);
  recs.push_back(unfinished);
  RunMetrics m = compute_metrics(recs, 0, 0);
  EXPECT_EQ(m.requests, 3u);
  EXPECT_EQ(m.completed, 2u);
  EXPECT_EQ(m.output_tokens, 40u);
  EXPECT_DOUBLE_EQ(m.makespan_s, 4.0);  // 1 s -> 5 s
  EXPECT_DOUBLE_EQ(m.throughput_tok_s, 10.0);
  EXPECT_DOUBLE_EQ(m.p50_ttft_s, 0.35);  // TTFTs 0.5 and 0.2
  EXPECT_DOUBLE_EQ(m.p95_ttft_s, 0.2 + 0.95 * 0.3);
  EXPECT_DOUBLE_EQ(m.mean_ttft_s, 0.35);
}

TEST(RunMetrics, CDividesTheByteTimeIntegralByCompletedRequestsAndFloorsUseTransfers) {
  // Two retrieved requests of 2 GiB and 1 GiB with transfers of 0.5 s and 1 s; the byte-time of
  // the run (say 2 GiB for 3 s + 1 GiB for 2 s = 8 GiB·s) is the controller's integral.
  RequestRecord a = record(1, 0, 1000, 2000, 1);
  a.path = RequestPath::kStaged;
  a.cached_bytes = 2 * kGiB;
  a.retrieval_start = at_ms(400);
  a.retrieval_end = at_ms(900);
  RequestRecord b = record(2, 0, 3000, 4000, 1);
  b.path = RequestPath::kOrdinary;
  b.cached_bytes = 1 * kGiB;
  b.retrieval_start = at_ms(1500);
  b.retrieval_end = at_ms(2500);
  std::vector<RequestRecord> recs{a, b};
  RunMetrics m = compute_metrics(recs, 8.0, 1.0 * double(kGiB));
  EXPECT_DOUBLE_EQ(m.c_gib_s_per_req, 4.0);
  EXPECT_DOUBLE_EQ(m.c_floor_gib_s_per_req, (2 * 0.5 + 1 * 1.0) / 2);
  // With staging at 1 GiB/s alone: 2 GiB × (2 + 0.5) s + 1 GiB × (1 + 1) s.
  EXPECT_DOUBLE_EQ(m.c_floor_staging_gib_s_per_req, (2 * 2.5 + 1 * 2.0) / 2);
  EXPECT_EQ(m.staged, 1u);
  EXPECT_EQ(m.ordinary, 1u);
}

TEST(RunMetrics, ErrorHistogramsBucketTheClaimsAsTheDaemonsMetricsDo) {
  // Two timed claims: one ready 0.3 s after its retrieval request (late), one 1.5 s before it.
  std::vector<RequestRecord> recs{record(1, 0, 4000, 5000, 1), record(2, 0, 4000, 5000, 1)};
  for (RequestRecord& r : recs) {
    r.committed = at_ms(1000);
    r.retrieval_requested = at_ms(3000);
    r.projected_use_at_commit = at_ms(2900);  // TTU error +0.1 s
    r.ttr_at_commit = std::chrono::milliseconds(500);
  }
  recs[0].ready = at_ms(3300);  // TTR error 2.3 - 0.5 = +1.8 s; lateness +0.3 s
  recs[1].ready = at_ms(1500);  // TTR error 0; lateness -1.5 s
  RunMetrics m = compute_metrics(recs, 0, 0);
  const std::vector<double> bounds = projection_error_bounds();
  auto count_le = [&](const std::string& name, double bound) -> uint64_t {
    for (const auto& [n, counts] : m.histograms) {
      if (n != name) continue;
      for (size_t i = 0; i < bounds.size(); ++i) {
        if (bounds[i] == bound) return counts[i];
      }
    }
    return 999;
  };
  ASSERT_EQ(m.histograms.size(), 3u);
  for (const auto& [name, counts] : m.histograms) {
    ASSERT_EQ(counts.size(), bounds.size() + 1) << name;
    EXPECT_EQ(counts.back(), 2u) << name;  // +Inf: every claim
  }
  EXPECT_EQ(count_le("lateness", -2), 0u);
  EXPECT_EQ(count_le("lateness", -1), 1u);
  EXPECT_EQ(count_le("lateness", 0.2), 1u);
  EXPECT_EQ(count_le("lateness", 0.5), 2u);
  EXPECT_EQ(count_le("ttu_error", 0.05), 0u);
  EXPECT_EQ(count_le("ttu_error", 0.1), 2u);
  EXPECT_EQ(count_le("ttr_error", 0), 1u);
  EXPECT_EQ(count_le("ttr_error", 1), 1u);
  EXPECT_EQ(count_le("ttr_error", 2), 2u);
  // Committed before its use was projected (the adapter's hour-away placeholder): no TTU error.
  recs[1].projected_use_at_commit = at_ms(1000 + 3600 * 1000);
  m = compute_metrics(recs, 0, 0);
  EXPECT_EQ(count_le("ttu_error", 10), 1u);
  EXPECT_DOUBLE_EQ(m.ttu_err_p95_s, 0.1);
}

}  // namespace
}  // namespace tempokv
