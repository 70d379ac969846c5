// percentile: the one home of quantiles (eval's metrics, the daemon's projection-error quantiles,
// the benches' medians, restore-bench's percentiles).
#pragma once

#include <vector>

namespace tempokv {

// The q-quantile (q in [0, 1]) of values, linearly interpolated between the order statistics
// (numpy's default): position q × (n − 1). 0 for an empty set. values need not be sorted.
double percentile(std::vector<double> values, double q);

// percentile(values, 0.5): the middle value, or the mean of the two middle ones.
double median(std::vector<double> values);

// The nearest-rank q-quantile: the ceil(q × n)-th smallest value (at least the first), a value
// that was measured, as a reader counting samples takes it: of 20, p95 is the 19th. 0 for an
// empty set.
double nearest_rank_percentile(std::vector<double> values, double q);

}  // namespace tempokv
