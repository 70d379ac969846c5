#include "controller/error_feedback.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tempokv {

namespace {

// Lateness and earliness weights as integers (per mille of `quantile`), so equal costs compare equal.
struct Weights {
  int64_t late;
  int64_t early;
};

Weights weights(double quantile) {
  const auto late = static_cast<int64_t>(std::llround(std::clamp(quantile, 0.0, 1.0) * 1000));
  return {late, 1000 - late};
}

}  // namespace

void ErrorFeedback::record(Duration error, Duration read) {
  // Errors beyond an hour weigh as an hour (keeps the integer costs below overflow).
  constexpr Duration kHour = std::chrono::hours(1);
  recent_.push_back({std::clamp(error, -kHour, kHour), std::clamp(read, Duration::zero(), kHour)});
  if (recent_.size() > options_.window) recent_.pop_front();

  // The cost is piecewise linear in M with breaks at every e and e − r: one of them (or 0) is a
  // least-cost margin. n ≤ window, so the O(n²) search is cheap (once per claim, not per event).
  std::vector<Duration> candidates{Duration::zero()};
  for (const Sample& s : recent_) {
    candidates.push_back(s.error);
    candidates.push_back(s.error - s.read);
  }
  const Weights w = weights(options_.quantile);
  bool first = true;
  int64_t best = 0;
  Duration best_margin{0};
  for (Duration m : candidates) {
    m = std::clamp(m, Duration::zero(), options_.max_margin);
    int64_t early = 0, late = 0;
    for (const Sample& s : recent_) {
      if (m > s.error) {
        early += (m - s.error).count();
      } else {
        late += std::min(s.error - m, s.read).count();
      }
    }
    const int64_t cost = early * w.early + late * w.late;
    if (first || cost < best || (cost == best && m > best_margin)) {
      best = cost;
      best_margin = m;
      first = false;
    }
  }
  margin_ = best_margin;
}

}  // namespace tempokv
