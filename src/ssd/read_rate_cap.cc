#include "ssd/read_rate_cap.h"

#include <algorithm>

namespace tempokv {

ReadRateCap::ReadRateCap(Executor& executor, std::unique_ptr<SsdEngine> inner,
                         double read_bytes_per_s, double burst_bytes)
    : ForwardingEngine(std::move(inner)),
      executor_(executor),
      rate_(read_bytes_per_s),
      burst_(std::max(0.0, burst_bytes)),
      tokens_(burst_),
      filled_at_(executor.now()) {}

TimePoint ReadRateCap::charge(size_t bytes) {
  const TimePoint now = executor_.now();
  if (now > filled_at_) {
    tokens_ = std::min(burst_, tokens_ + to_seconds(now - filled_at_) * rate_);
    filled_at_ = now;
  }
  tokens_ -= double(bytes);
  return tokens_ >= 0 ? now : now + from_seconds(-tokens_ / rate_);
}

void ReadRateCap::read(FileId file, uint64_t offset, void* buf, size_t len, IoCallback cb,
                       IoThreadHook on_io_thread) {
  inner_->read(
      file, offset, buf, len,
      [this, cb = std::move(cb)](Result<size_t> r) mutable {
        if (!r.is_ok() || *r == 0) {
          cb(std::move(r));
          return;
        }
        const TimePoint due = charge(*r);
        if (due <= executor_.now()) {
          cb(std::move(r));
          return;
        }
        executor_.at(due, [cb = std::move(cb), r = std::move(r)]() mutable { cb(std::move(r)); });
      },
      std::move(on_io_thread));
}

}  // namespace tempokv
