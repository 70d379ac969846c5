#include "provider/rate_calibrator.h"

namespace tempokv {

RateCalibrator::RateCalibrator(double prior_bytes_per_s, Duration sample, double weight)
    : rate_(prior_bytes_per_s), sample_(sample), weight_(weight) {}

void RateCalibrator::advance(TimePoint now, uint32_t in_flight_before) {
  if (in_flight_before > 0) busy_ += now - last_;
  last_ = now;
}

void RateCalibrator::add_completed(uint64_t bytes) {
  if (samples_ > 0 && busy_ == Duration::zero() && last_ == closed_at_) {
    closed_bytes_ += bytes;
    double sample = static_cast<double>(closed_bytes_) / to_seconds(closed_busy_);
    rate_ = rate_before_ + weight_ * (sample - rate_before_);
    return;
  }
  bytes_ += bytes;
  if (busy_ < sample_) return;
  double sample = static_cast<double>(bytes_) / to_seconds(busy_);
  rate_before_ = rate_;
  rate_ += weight_ * (sample - rate_);
  ++samples_;
  closed_at_ = last_;
  closed_bytes_ = bytes_;
  closed_busy_ = busy_;
  bytes_ = 0;
  busy_ = Duration::zero();
}

}  // namespace tempokv
