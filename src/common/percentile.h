// percentile: the one quantile helper (eval's metrics, the daemon's projection-error quantiles).
#pragma once

#include <vector>

namespace tempokv {

// The q-quantile (q in [0, 1]) of values, linearly interpolated between the order statistics
// (numpy's default): position q × (n − 1). 0 for an empty set. values need not be sorted.
double percentile(std::vector<double> values, double q);

}  // namespace tempokv
