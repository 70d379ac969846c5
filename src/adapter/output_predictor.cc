#include "adapter/output_predictor.h"

#include <algorithm>

namespace tempokv {

OutputPredictor::OutputPredictor(uint32_t window, uint32_t prior_tokens)
    : window_(window ? window : 1), prior_tokens_(prior_tokens ? prior_tokens : 1), suffix_(1, 0) {}

void OutputPredictor::record_completion(uint32_t output_tokens) {
  recent_.push_back(output_tokens);
  sorted_.insert(std::upper_bound(sorted_.begin(), sorted_.end(), output_tokens), output_tokens);
  if (recent_.size() > window_) {
    sorted_.erase(std::lower_bound(sorted_.begin(), sorted_.end(), recent_.front()));
    recent_.pop_front();
  }
  suffix_.assign(sorted_.size() + 1, 0);
  for (size_t i = sorted_.size(); i-- > 0;) suffix_[i] = suffix_[i + 1] + sorted_[i];
}

uint32_t OutputPredictor::remaining(uint32_t generated, uint32_t limit) const {
  if (generated >= limit) return 0;
  const size_t first = static_cast<size_t>(
      std::upper_bound(sorted_.begin(), sorted_.end(), generated) - sorted_.begin());
  const uint64_t count = sorted_.size() - first;
  uint64_t rem;
  if (count > 0) {
    // The mean of (N − generated) over the N > generated, each ≥ 1, rounded half away from zero:
    // in integers, exactly what llround(double(sum) / double(count)) gave (a tie is exact in
    // both; otherwise the quotient is at least 1 / (2 count) from one, far beyond a double's
    // error at these magnitudes).
    const uint64_t sum = suffix_[first] - count * generated;
    rem = (2 * sum + count) / (2 * count);
  } else {
    rem = prior_tokens_ > generated ? prior_tokens_ - generated : 1;
  }
  return static_cast<uint32_t>(std::min<uint64_t>(rem, limit - generated));
}

uint32_t OutputPredictor::remaining_quantile(uint32_t generated, uint32_t limit, double q) const {
  if (generated >= limit) return 0;
  const size_t first = static_cast<size_t>(
      std::upper_bound(sorted_.begin(), sorted_.end(), generated) - sorted_.begin());
  const size_t count = sorted_.size() - first;
  if (count == 0) return remaining(generated, limit);  // the prior
  // The order statistic at position q·(count − 1), rounded down, of the lengths above generated.
  const auto pos = std::min(count - 1, static_cast<size_t>(q * static_cast<double>(count - 1)));
  return std::min(std::max<uint32_t>(1, sorted_[first + pos] - generated), limit - generated);
}

void OutputPredictor::conditional_atoms(uint32_t generated, uint32_t limit, uint32_t max_atoms,
                                        std::vector<Atom>& out) const {
  if (generated >= limit) return;
  const size_t first = static_cast<size_t>(
      std::upper_bound(sorted_.begin(), sorted_.end(), generated) - sorted_.begin());
  const size_t count = sorted_.size() - first;
  if (count == 0) {
    out.push_back({double(remaining(generated, limit)), 1.0});
    return;
  }
  const size_t runs = std::min<size_t>(count, std::max<uint32_t>(max_atoms, 1));
  for (size_t r = 0; r < runs; ++r) {
    const size_t lo = first + r * count / runs, hi = first + (r + 1) * count / runs;
    uint64_t sum = 0;
    for (size_t i = lo; i < hi; ++i) sum += std::min(sorted_[i], limit) - generated;
    out.push_back({double(sum) / double(hi - lo), double(hi - lo) / double(count)});
  }
}

}  // namespace tempokv
