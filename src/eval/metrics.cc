#include "eval/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/units.h"

namespace tempokv {

RunMetrics compute_metrics(std::span<const RequestRecord> records, double protected_gib_s,
                           double ssd_read_bytes_per_s) {
  RunMetrics m;
  m.requests = records.size();
  std::vector<double> ttft;
  std::optional<TimePoint> first, last;
  double floor_byte_s = 0, floor_staging_byte_s = 0;
  std::vector<double> lateness, ttu_err, ttr_err, ttr_rel_err;
  for (const RequestRecord& r : records) {
    if (r.committed && r.ready && r.retrieval_requested) {
      lateness.push_back(to_seconds(*r.ready - *r.retrieval_requested));
      if (lateness.back() > 0) ++m.late_claims;
    }
    // A claim committed before any order update projected its use (Immediate at the hit
    // report) carries the adapter's "unknown" use time, an hour away: no projection to score
    // (tempokvd's histograms leave it out the same way).
    if (r.committed && r.retrieval_requested && r.projected_use_at_commit &&
        *r.projected_use_at_commit - *r.committed < kPlaceholderUse) {
      ttu_err.push_back(to_seconds(*r.retrieval_requested - *r.projected_use_at_commit));
    }
    if (r.committed && r.ready && r.ttr_at_commit) {
      ttr_err.push_back(to_seconds(*r.ready - *r.committed - *r.ttr_at_commit));
      if (*r.ttr_at_commit > Duration::zero()) {
        ttr_rel_err.push_back(std::abs(ttr_err.back()) / to_seconds(*r.ttr_at_commit));
      }
    }
    first = first ? std::min(*first, r.arrival) : r.arrival;
    m.verified_chunks += r.verified_chunks;
    m.mismatched_chunks += r.mismatched_chunks;
    if (!r.finished) continue;
    ++m.completed;
    m.output_tokens += r.output_tokens;
    last = last ? std::max(*last, *r.finished) : *r.finished;
    if (std::optional<Duration> t = r.ttft()) ttft.push_back(to_seconds(*t));
    switch (r.path) {
      case RequestPath::kStaged:
        ++m.staged;
        break;
      case RequestPath::kOrdinary:
        ++m.ordinary;
        break;
      case RequestPath::kNoHit:
        ++m.no_hit;
        break;
      case RequestPath::kRecompute:
        ++m.recomputes;
        break;
    }
    if (r.retrieval_start && r.retrieval_end &&
        (r.path == RequestPath::kStaged || r.path == RequestPath::kOrdinary)) {
      const double bytes = double(r.cached_bytes);
      const double transfer_s = to_seconds(*r.retrieval_end - *r.retrieval_start);
      floor_byte_s += bytes * transfer_s;
      const double staging_s = ssd_read_bytes_per_s > 0 ? bytes / ssd_read_bytes_per_s : 0;
      floor_staging_byte_s += bytes * (staging_s + transfer_s);
    }
  }
  m.timed_claims = lateness.size();
  m.lateness_p50_s = percentile(lateness, 0.50);
  m.lateness_p95_s = percentile(lateness, 0.95);
  m.ttu_err_p50_s = percentile(ttu_err, 0.50);
  m.ttu_err_p95_s = percentile(ttu_err, 0.95);
  m.ttr_err_p50_s = percentile(ttr_err, 0.50);
  m.ttr_err_p95_s = percentile(ttr_err, 0.95);
  m.ttr_rel_err_p95 = percentile(ttr_rel_err, 0.95);
  const std::vector<double> bounds = projection_error_bounds();
  m.histograms = {{"ttu_error", cumulative_bucket_counts(ttu_err, bounds)},
                  {"ttr_error", cumulative_bucket_counts(ttr_err, bounds)},
                  {"lateness", cumulative_bucket_counts(lateness, bounds)}};
  m.p50_ttft_s = percentile(ttft, 0.50);
  m.p95_ttft_s = percentile(ttft, 0.95);
  m.p99_ttft_s = percentile(ttft, 0.99);
  for (double t : ttft) m.mean_ttft_s += t / double(ttft.size());
  if (first && last && *last > *first) {
    m.makespan_s = to_seconds(*last - *first);
    m.throughput_tok_s = double(m.output_tokens) / m.makespan_s;
  }
  if (m.completed > 0) {
    const double n = double(m.completed);
    m.c_gib_s_per_req = protected_gib_s / n;
    m.c_floor_gib_s_per_req = floor_byte_s / double(kGiB) / n;
    m.c_floor_staging_gib_s_per_req = floor_staging_byte_s / double(kGiB) / n;
  }
  return m;
}

}  // namespace tempokv
