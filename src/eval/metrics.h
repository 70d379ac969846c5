// Run metrics of the evaluation (DESIGN.md §5), computed from the engine's per-request records
// and the controller's byte-time integral:
//   TTFT percentiles   client submission -> first token (p50, p95, p99; linear interpolation
//                      between order statistics, numpy's default)
//   throughput         output tokens of successful requests / (last completion − first
//                      submission)
//   C                  ∫ (protected + reserved) dt / completed requests, over the whole run
//   lateness           per committed claim whose retrieval was requested: ready − requested
//                      (> 0: the runtime waited for staging); p50, p95 and the count of late ones
//   TTU / TTR error    per committed claim: actual − projected (use time; time to ready), as
//                      the controller saw them at commit (negative TTU error and positive TTR
//                      error are the late side)
//   C floor            what any stage-ready policy must hold at least: each retrieved request's
//                      footprint for the duration of its fast tier -> device transfer (and, in
//                      the "with staging" variant, also while its bytes are read from the SSD
//                      alone at the full aggregate rate)
// Free functions over values; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/error_buckets.h"
#include "common/percentile.h"
#include "engine/request_record.h"
#include "tempokv/executor.h"

namespace tempokv {

struct RunMetrics {
  uint64_t requests = 0;       // records given
  uint64_t completed = 0;      // finished (every path, recompute included, produced its output)
  uint64_t output_tokens = 0;  // of completed requests
  double p50_ttft_s = 0, p95_ttft_s = 0, p99_ttft_s = 0, mean_ttft_s = 0;
  double throughput_tok_s = 0;     // output_tokens / (last completion − first submission)
  double makespan_s = 0;           // last completion − first submission
  double c_gib_s_per_req = 0;      // the integral / completed
  double c_floor_gib_s_per_req = 0;  // Σ footprint × transfer duration / completed
  // Σ footprint × (footprint / ssd rate + transfer duration) / completed.
  double c_floor_staging_gib_s_per_req = 0;
  uint64_t staged = 0, ordinary = 0, no_hit = 0, recomputes = 0;  // requests by path
  uint64_t verified_chunks = 0, mismatched_chunks = 0;
  uint64_t timed_claims = 0;  // committed claims whose retrieval was requested
  uint64_t late_claims = 0;   // of those, ready after the request
  double lateness_p50_s = 0, lateness_p95_s = 0;
  double ttu_err_p50_s = 0, ttu_err_p95_s = 0, ttr_err_p50_s = 0, ttr_err_p95_s = 0;
  // p95 of |ready − commit − TTR at commit| / TTR at commit, over claims that needed reads.
  double ttr_rel_err_p95 = 0;
  // The same errors bucketed as tempokvd's /metrics buckets them (common/error_buckets.h).
  ErrorHistograms histograms;
};

// protected_gib_s: ∫ (protected + reserved) dt of the whole run (ControllerStats). ssd_read_bytes_per_s:
// the aggregate SSD -> fast tier rate for the "with staging" floor (0 leaves it 0).
RunMetrics compute_metrics(std::span<const RequestRecord> records, double protected_gib_s,
                           double ssd_read_bytes_per_s);

}  // namespace tempokv
