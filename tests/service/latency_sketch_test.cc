// LatencySketch: quantiles within 1% of the exact ones, over a window of recent values.
#include "daemon/latency_sketch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tempokv::service {
namespace {

TEST(LatencySketch, QuantilesAreWithinOnePercentOfTheExactOnes) {
  LatencySketch sketch;
  EXPECT_EQ(sketch.quantile(0.5), 0);
  std::vector<double> values;
  uint64_t x = 88172645463325252ULL;
  for (int i = 0; i < 50000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift: latencies over five decades
    const double v = 1e-5 * std::pow(10.0, double(x % 5000) / 1000.0);
    values.push_back(v);
    sketch.observe(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.0, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    const size_t k = std::min(values.size() - 1, size_t(q * double(values.size())));
    EXPECT_NEAR(sketch.quantile(q), values[k], values[k] * 0.01) << "q " << q;
  }
}

TEST(LatencySketch, OldValuesLeaveTheWindow) {
  LatencySketch sketch;
  for (uint64_t i = 0; i < LatencySketch::kWindow; ++i) sketch.observe(1.0);  // slow, long ago
  for (uint64_t i = 0; i < 2 * LatencySketch::kWindow; ++i) sketch.observe(0.001);
  EXPECT_NEAR(sketch.quantile(1.0), 0.001, 0.001 * 0.01);
  EXPECT_LE(sketch.window_count(), 2 * LatencySketch::kWindow);
}

}  // namespace
}  // namespace tempokv::service
