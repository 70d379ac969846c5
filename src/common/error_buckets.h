// The buckets of the projection-error histograms (TTU error, TTR error, lateness): one set of
// bounds for tempokvd's /metrics and for the eval's rows, so their figures compare bucket by
// bucket (scripts/plot draws both).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tempokv {

// The adapter's use time for a request no order update has placed is an hour away
// (runtime_adapter.cc, kUnknownTtu): a projection at least this far out is that placeholder and
// scores no TTU error, in tempokvd's /metrics and in the eval's rows alike.
inline constexpr std::chrono::minutes kPlaceholderUse{30};

// Finite upper bounds in seconds, ascending: ±10, 5, 2, 1, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01
// and 0. A histogram has one more bucket, +Inf.
std::vector<double> projection_error_bounds();

// Cumulative counts of `values` at each bound (values <= bound), then the +Inf bucket (all of
// them, NaN excluded), as Prometheus' `le` buckets count.
std::vector<uint64_t> cumulative_bucket_counts(const std::vector<double>& values,
                                               const std::vector<double>& bounds);

// Named histograms ("ttu_error", "ttr_error", "lateness"), each the cumulative counts over
// projection_error_bounds() that cumulative_bucket_counts returns.
using ErrorHistograms = std::vector<std::pair<std::string, std::vector<uint64_t>>>;

// A bound as /metrics writes its `le` label: whole numbers without a fraction ("-10", "0"),
// others shortest ("0.05").
std::string bucket_label(double bound);

}  // namespace tempokv
