#include "common/error_buckets.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace tempokv {

std::vector<double> projection_error_bounds() {
  std::vector<double> b;
  for (double v : {10.0, 5.0, 2.0, 1.0, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01}) b.push_back(-v);
  b.push_back(0);
  for (double v : {0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0}) b.push_back(v);
  return b;
}

std::vector<uint64_t> cumulative_bucket_counts(const std::vector<double>& values,
                                               const std::vector<double>& bounds) {
  std::vector<uint64_t> out(bounds.size() + 1, 0);
  for (double v : values) {
    if (std::isnan(v)) continue;
    const size_t first = std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin();
    for (size_t i = first; i < out.size(); ++i) ++out[i];
  }
  return out;
}

std::string bucket_label(double bound) {
  if (std::isinf(bound)) return bound > 0 ? "+Inf" : "-Inf";
  if (bound == std::trunc(bound) && std::fabs(bound) < 9007199254740992.0) {
    return std::to_string(static_cast<int64_t>(bound));
  }
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, bound);
  return std::string(buf, end);
}

}  // namespace tempokv
