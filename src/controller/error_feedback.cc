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
  // least-cost margin. Swept upwards over those (distinct, clamped) in O(n log n) rather than
  // costed one by one (this runs once per claim that became ready: thousands per second in the
  // dense case). At margin m a sample costs r of lateness while m <= e − r ("low"), e − m while
  // e − r < m <= e ("mid"), and m − e of earliness once m > e: the sums of each group give the
  // same integers as costing every sample.
  const size_t n = recent_.size();
  std::vector<Duration>& candidates = scratch_candidates_;
  std::vector<std::pair<Duration, size_t>>& to_mid = scratch_to_mid_;  // (e − r, sample)
  std::vector<std::pair<Duration, size_t>>& to_early = scratch_to_early_;  // (e, sample)
  candidates.assign(1, Duration::zero());
  to_mid.clear();
  to_early.clear();
  int64_t low_read = 0;  // the sum of r over "low"
  for (size_t i = 0; i < n; ++i) {
    const Sample& s = recent_[i];
    candidates.push_back(std::clamp(s.error, Duration::zero(), options_.max_margin));
    candidates.push_back(std::clamp(s.error - s.read, Duration::zero(), options_.max_margin));
    to_mid.emplace_back(s.error - s.read, i);
    to_early.emplace_back(s.error, i);
    low_read += s.read.count();
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  std::sort(to_mid.begin(), to_mid.end());
  std::sort(to_early.begin(), to_early.end());
  const Weights w = weights(options_.quantile);
  int64_t mid_count = 0, mid_error = 0, early_count = 0, early_error = 0;
  size_t next_mid = 0, next_early = 0;
  bool first = true;
  int64_t best = 0;
  Duration best_margin{0};
  for (const Duration m : candidates) {
    // e − r <= e: a sample leaves "low" no later than it leaves "mid".
    for (; next_mid < n && to_mid[next_mid].first < m; ++next_mid) {
      const Sample& s = recent_[to_mid[next_mid].second];
      low_read -= s.read.count();
      ++mid_count;
      mid_error += s.error.count();
    }
    for (; next_early < n && to_early[next_early].first < m; ++next_early) {
      const Sample& s = recent_[to_early[next_early].second];
      --mid_count;
      mid_error -= s.error.count();
      ++early_count;
      early_error += s.error.count();
    }
    const int64_t early = early_count * m.count() - early_error;
    const int64_t late = low_read + mid_error - mid_count * m.count();
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
