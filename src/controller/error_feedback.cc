#include "controller/error_feedback.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tempokv {

void ErrorFeedback::record(Duration error) {
  recent_.push_back(error);
  if (recent_.size() > options_.window) recent_.pop_front();
  std::vector<Duration> sorted(recent_.begin(), recent_.end());
  std::sort(sorted.begin(), sorted.end());
  // The order statistic at position q·(n − 1), rounded up: the side of caution.
  const auto pos = static_cast<size_t>(std::ceil(options_.quantile * double(sorted.size() - 1)));
  margin_ = std::clamp(sorted[std::min(pos, sorted.size() - 1)], Duration::zero(),
                       options_.max_margin);
}

}  // namespace tempokv
