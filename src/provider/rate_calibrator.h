// RateCalibrator: the SSD's read rate and, when the store's writes are seen, its write rate,
// each learned from completions over the device time its kind had.
//
// Time counts only while at least one read (or seen write) is in flight, so idle gaps between
// bursts do not dilute the rate, and it is shared among the requests in flight as the device
// shares it: an interval with r reads and w writes in flight gives r / (r + w) of it to the reads
// and the rest to the writes. Each kind's completed bytes and device time accumulate until its
// time reaches one sample (ProviderOptions::calibration_sample); the sample's bytes / seconds
// then moves that kind's rate by an exponentially weighted average: rate += weight * (sample -
// rate). Reads start at the prior, writes at the prior over the prior write cost. So neither
// kind reads as a slow device while the other shares it, and the write cost (read rate / write
// rate) is learned, not taken on trust. Completions at the instant a kind's sample closed belong
// to that sample (they were served during its time): concurrent reads finishing together would
// otherwise split into one sample at half the rate and bytes carried into the next. It also
// learns how many seen writes are in flight while reads are (writes_while_reading(), the TTR
// projection's background). Control-plane thread only; time comes from the caller (the Executor).
#pragma once

#include <cstdint>

#include "tempokv/executor.h"

namespace tempokv {

class RateCalibrator {
 public:
  // prior_write_cost: a written byte's device time in bytes read before any write completed; 0
  // when writes are not seen (write_cost() then stays 0).
  RateCalibrator(double prior_bytes_per_s, Duration sample, double weight,
                 double prior_write_cost = 0);

  // The reads or seen writes in flight are about to change at `now` (call before the change).
  void advance(TimePoint now, uint32_t reads_before, uint32_t writes_before);
  // A read (a seen write) of `bytes` completed successfully (call after advance()).
  void add_completed_read(uint64_t bytes) { reads_.add(bytes, weight_, sample_, last_); }
  void add_completed_write(uint64_t bytes) {
    if (writes_.rate > 0) writes_.add(bytes, weight_, sample_, last_);
  }

  double bytes_per_s() const { return reads_.rate; }
  // Device time of one byte written, in bytes read (the read rate over the write rate).
  double write_cost() const { return writes_.rate > 0 ? reads_.rate / writes_.rate : 0.0; }
  // The mean number of seen writes in flight while reads were (time-averaged over samples of
  // `sample` of read-busy time, moved by the same weight; 0 before the first and when writes are
  // not seen): reads committed later share the device with writes not issued yet too.
  double writes_while_reading() const { return writes_while_reading_; }
  uint64_t samples() const { return reads_.samples; }
  uint64_t write_samples() const { return writes_.samples; }

 private:
  struct Kind {
    double rate;
    Duration time{};  // device time of this kind in the open sample
    uint64_t bytes = 0;
    uint64_t samples = 0;
    // The last closed sample, reopened by completions at the same instant.
    TimePoint closed_at{};
    double rate_before = 0;
    uint64_t closed_bytes = 0;
    Duration closed_time{};
    // `now`: the calibrator's clock (the last advance()).
    void add(uint64_t b, double weight, Duration sample, TimePoint now);
  };
  Duration sample_;
  double weight_;
  TimePoint last_{};
  Kind reads_, writes_;
  Duration read_busy_{};      // read-busy time in the open sample of writes_while_reading
  Duration write_overlap_{};  // sum over its intervals of (seen writes in flight x length)
  double writes_while_reading_ = 0;
};

}  // namespace tempokv
