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

}  // namespace tempokv
