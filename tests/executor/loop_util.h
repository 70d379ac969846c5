// Running a RealExecutor's loop in tests: until a condition, with a guard against hangs.
#pragma once

#include <chrono>
#include <functional>
#include <optional>

#include "executor/real_executor.h"

namespace tempokv::testing {

// Runs the loop until pred() or 30 s; a hang then fails the test instead of blocking it.
inline bool run_until(RealExecutor& ex, const std::function<bool()>& pred) {
  TimerHandle guard = ex.after(std::chrono::seconds(30), [&ex] { ex.stop(); });
  bool ok = ex.run_until(pred);
  guard.cancel();
  return ok;
}

// Runs the loop until pred, with a 1 ms timer ticking: pred may turn true on another thread (a
// file created, a gate reached, a hook finished) with no event on the loop to notice it.
inline bool run_ticking(RealExecutor& ex, const std::function<bool()>& pred) {
  bool stop = false;
  std::function<void()> tick = [&] {
    if (!stop) ex.after(std::chrono::milliseconds(1), tick);
  };
  ex.after(std::chrono::milliseconds(1), tick);
  bool ok = run_until(ex, pred);
  stop = true;
  // Let the last tick fire (it is due first) so that no timer outlives `tick`.
  std::optional<bool> drained;
  ex.after(std::chrono::milliseconds(2), [&] { drained = true; });
  run_until(ex, [&] { return drained.has_value(); });
  return ok;
}

}  // namespace tempokv::testing
