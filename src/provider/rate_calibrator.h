// RateCalibrator: the effective aggregate SSD -> fast tier read rate, measured over busy time.
//
// Time counts only while at least one read is in flight, so idle gaps between bursts do not dilute
// the rate. Completed bytes and busy time accumulate until the busy time reaches one sample
// (ProviderOptions::calibration_sample); the sample's bytes / busy-seconds then moves the estimate
// by an exponentially weighted average: rate += weight * (sample - rate). The estimate starts at
// the prior. Reads that complete at the instant a sample closed belong to that sample (they
// were served during its busy time): concurrent reads finishing together would otherwise split
// into one sample at half the rate and bytes carried into the next.
// Control-plane thread only; time comes from the caller (the Executor).
#pragma once

#include <cstdint>

#include "tempokv/executor.h"

namespace tempokv {

class RateCalibrator {
 public:
  RateCalibrator(double prior_bytes_per_s, Duration sample, double weight);

  // The number of reads in flight is about to change at `now` (call before the change).
  void advance(TimePoint now, uint32_t in_flight_before);
  // A read of `bytes` completed successfully (call after advance()).
  void add_completed(uint64_t bytes);

  double bytes_per_s() const { return rate_; }
  uint64_t samples() const { return samples_; }

 private:
  double rate_;
  Duration sample_;
  double weight_;
  TimePoint last_{};
  Duration busy_{};
  uint64_t bytes_ = 0;
  uint64_t samples_ = 0;
  // The last closed sample, reopened by completions at the same instant.
  TimePoint closed_at_{};
  double rate_before_ = 0;
  uint64_t closed_bytes_ = 0;
  Duration closed_busy_{};
};

}  // namespace tempokv
