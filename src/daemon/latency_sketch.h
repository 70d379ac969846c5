// LatencySketch: quantiles of recent reply latencies without keeping (or copying) the samples.
// Values fall into logarithmic buckets of relative width 2% (DDSketch's scheme), so a quantile
// is within 1% of a value of the window. The window is the last kWindow to 2 * kWindow values:
// two sketches, the older dropped whenever the newer has seen kWindow values. Memory is a few
// thousand counters; observe() is O(1), quantile() O(buckets).
//
// Threading: not thread-safe (the daemon's loop thread uses it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tempokv::service {

class LatencySketch {
 public:
  static constexpr uint64_t kWindow = uint64_t{1} << 16;
  static constexpr double kRelativeError = 0.01;
  static constexpr double kMinSeconds = 1e-7;  // smaller values count in the lowest bucket

  void observe(double seconds);
  // The q-quantile (0..1) of the window, within kRelativeError; 0 before any value.
  double quantile(double q) const;
  uint64_t window_count() const { return current_.count + previous_.count; }

 private:
  struct Buckets {
    std::vector<uint64_t> counts;  // by bucket index
    uint64_t count = 0;
  };
  static size_t index(double seconds);
  static double value(size_t index);
  Buckets current_, previous_;
};

}  // namespace tempokv::service
