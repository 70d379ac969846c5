#include "adapter/output_predictor.h"

#include <algorithm>
#include <cmath>

namespace tempokv {

OutputPredictor::OutputPredictor(uint32_t window, uint32_t prior_tokens)
    : window_(window ? window : 1), prior_tokens_(prior_tokens ? prior_tokens : 1) {}

void OutputPredictor::record_completion(uint32_t output_tokens) {
  recent_.push_back(output_tokens);
  if (recent_.size() > window_) recent_.pop_front();
}

uint32_t OutputPredictor::remaining(uint32_t generated, uint32_t limit) const {
  if (generated >= limit) return 0;
  uint64_t sum = 0, count = 0;
  for (uint32_t n : recent_) {
    if (n > generated) {
      sum += n - generated;
      ++count;
    }
  }
  double mean = count ? double(sum) / double(count)
                      : double(prior_tokens_ > generated ? prior_tokens_ - generated : 1);
  auto rem = static_cast<uint32_t>(std::llround(std::max(1.0, mean)));
  return std::min(rem, limit - generated);
}

uint32_t OutputPredictor::remaining_quantile(uint32_t generated, uint32_t limit, double q) const {
  if (generated >= limit) return 0;
  scratch_.clear();
  for (uint32_t n : recent_) {
    if (n > generated) scratch_.push_back(n - generated);
  }
  if (scratch_.empty()) return remaining(generated, limit);  // the prior
  // The order statistic at position q·(count − 1), rounded down.
  const auto pos = std::min(scratch_.size() - 1,
                            static_cast<size_t>(q * static_cast<double>(scratch_.size() - 1)));
  std::nth_element(scratch_.begin(), scratch_.begin() + static_cast<std::ptrdiff_t>(pos),
                   scratch_.end());
  return std::min(std::max<uint32_t>(1, scratch_[pos]), limit - generated);
}

}  // namespace tempokv
