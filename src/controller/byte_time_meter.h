// ByteTimeMeter: the integral of a byte count over time, fed each time the count may have changed
// (C of DESIGN.md §5: protected + reserved bytes × seconds). Not thread-safe.
#pragma once

#include <cstdint>

#include "tempokv/executor.h"

namespace tempokv {

class ByteTimeMeter {
 public:
  // The count is `bytes` from time `now` on.
  void set(TimePoint now, uint64_t bytes) {
    if (started_) byte_s_ += double(bytes_) * to_seconds(now - last_);
    started_ = true;
    last_ = now;
    bytes_ = bytes;
  }
  // ∫ bytes dt up to the last set().
  double byte_seconds() const { return byte_s_; }
  double gib_seconds() const { return byte_s_ / double(1ULL << 30); }
  uint64_t bytes() const { return bytes_; }

 private:
  bool started_ = false;
  TimePoint last_{};
  uint64_t bytes_ = 0;
  double byte_s_ = 0;
};

}  // namespace tempokv
