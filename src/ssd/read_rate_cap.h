// ReadRateCap: wraps any SsdEngine and lets its reads complete no faster than a set rate, to
// emulate a slower drive on a fast one (the policy experiment on vLLM, docs/evaluation.md, needs
// staging to take long against an engine step). Writes, syncs and failed reads pass through.
//
// A token bucket of `burst_bytes` filled at `read_bytes_per_s`: a read that completed below takes
// its length from the bucket; when the bucket goes negative (a debt), the completion is held,
// by an Executor timer, until the rate has paid the debt back. With burst 0 the reads behave as
// one drive of that rate serving them in completion order: n bytes read at once complete over
// n / rate. The bucket starts full.
//
// Thread safety: the SsdEngine methods are as thread-safe as the wrapped engine's; the bucket is
// touched only on the Executor's thread (in the wrapped engine's posted callbacks). It owns the
// wrapped engine; a held completion refers to the Executor, not to the wrapper.
#pragma once

#include <memory>

#include "ssd/forwarding_engine.h"

namespace tempokv {

class ReadRateCap final : public ForwardingEngine {
 public:
  ReadRateCap(Executor& executor, std::unique_ptr<SsdEngine> inner, double read_bytes_per_s,
              double burst_bytes = 0);

  void read(FileId file, uint64_t offset, void* buf, size_t len, IoCallback cb,
            IoThreadHook on_io_thread = nullptr) override;

 private:
  // On the Executor's thread: charges `bytes` and returns when the read may complete.
  TimePoint charge(size_t bytes);

  Executor& executor_;
  const double rate_;   // bytes per second, > 0
  const double burst_;  // bucket size in bytes, >= 0
  double tokens_;       // may be negative: bytes owed
  TimePoint filled_at_{};
};

}  // namespace tempokv
