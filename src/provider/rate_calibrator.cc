#include "provider/rate_calibrator.h"

namespace tempokv {

RateCalibrator::RateCalibrator(double prior_bytes_per_s, Duration sample, double weight,
                               double prior_write_cost)
    : sample_(sample),
      weight_(weight),
      reads_{prior_bytes_per_s},
      writes_{prior_write_cost > 0 ? prior_bytes_per_s / prior_write_cost : 0.0} {}

void RateCalibrator::advance(TimePoint now, uint32_t reads_before, uint32_t writes_before) {
  const uint32_t n = reads_before + writes_before;
  if (n > 0) {
    const Duration dt = now - last_;
    reads_.time += dt * reads_before / n;
    writes_.time += dt * writes_before / n;
    if (reads_before > 0) {
      read_busy_ += dt;
      write_overlap_ += dt * writes_before;
      if (read_busy_ >= sample_) {
        const double mean = to_seconds(write_overlap_) / to_seconds(read_busy_);
        writes_while_reading_ += weight_ * (mean - writes_while_reading_);
        read_busy_ = write_overlap_ = Duration::zero();
      }
    }
  }
  last_ = now;
}

void RateCalibrator::Kind::add(uint64_t b, double weight, Duration sample, TimePoint now) {
  if (samples > 0 && time == Duration::zero() && now == closed_at) {
    closed_bytes += b;
    rate = rate_before + weight * (double(closed_bytes) / to_seconds(closed_time) - rate_before);
    return;
  }
  bytes += b;
  if (time < sample) return;
  rate_before = rate;
  rate += weight * (double(bytes) / to_seconds(time) - rate);
  ++samples;
  closed_at = now;
  closed_bytes = bytes;
  closed_time = time;
  bytes = 0;
  time = Duration::zero();
}

}  // namespace tempokv
