#include "daemon/latency_sketch.h"

#include <algorithm>
#include <cmath>

namespace tempokv::service {
namespace {

const double kGamma = (1 + LatencySketch::kRelativeError) / (1 - LatencySketch::kRelativeError);
const double kLogGamma = std::log(kGamma);

}  // namespace

size_t LatencySketch::index(double seconds) {
  if (!(seconds > kMinSeconds)) return 0;  // NaN and tiny values too
  return static_cast<size_t>(std::ceil(std::log(seconds / kMinSeconds) / kLogGamma));
}

double LatencySketch::value(size_t index) {
  // The bucket (gamma^(i-1), gamma^i] * min is represented by the point within 1% of both ends.
  if (index == 0) return kMinSeconds;
  return kMinSeconds * 2 * std::pow(kGamma, static_cast<double>(index)) / (kGamma + 1);
}

void LatencySketch::observe(double seconds) {
  if (current_.count == kWindow) {
    previous_ = std::move(current_);
    current_ = Buckets{};
  }
  const size_t i = index(seconds);
  if (current_.counts.size() <= i) current_.counts.resize(i + 1, 0);
  ++current_.counts[i];
  ++current_.count;
}

double LatencySketch::quantile(double q) const {
  const uint64_t n = window_count();
  if (n == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // The value of rank floor(q * n) + 1 (1-based), the last one for q = 1.
  const uint64_t rank = std::min(n, static_cast<uint64_t>(q * static_cast<double>(n)) + 1);
  const size_t buckets = std::max(current_.counts.size(), previous_.counts.size());
  uint64_t seen = 0;
  for (size_t i = 0; i < buckets; ++i) {
    if (i < current_.counts.size()) seen += current_.counts[i];
    if (i < previous_.counts.size()) seen += previous_.counts[i];
    if (seen >= rank) return value(i);
  }
  return value(buckets - 1);
}

}  // namespace tempokv::service
