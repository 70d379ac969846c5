#include "provider/rate_calibrator.h"

namespace tempokv {

RateCalibrator::RateCalibrator(double prior_bytes_per_s, Duration sample, double weight)
    : rate_(prior_bytes_per_s), sample_(sample), weight_(weight) {}

void RateCalibrator::advance(TimePoint now, uint32_t in_flight_before) {
  if (in_flight_before > 0) busy_ += now - last_;
  last_ = now;
}

void RateCalibrator::add_completed(uint64_t bytes) {
  bytes_ += bytes;
  if (busy_ < sample_) return;
  double sample = static_cast<double>(bytes_) / to_seconds(busy_);
  rate_ += weight_ * (sample - rate_);
  ++samples_;
  bytes_ = 0;
  busy_ = Duration::zero();
}

}  // namespace tempokv
