// Executor: the one event loop of the control plane, and its clock.
//
// Everything that decides (fast tier, provider, controller, adapter, emulated engine) runs on an
// Executor's single thread and never blocks. Data-moving engines complete by post()ing a callback
// back to it. Two implementations: RealExecutor (wall clock, timerfd/eventfd) and SimExecutor
// (virtual clock, deterministic order). Control-plane code never reads a system clock; it asks
// now(), which on both stands still while one event (a task, a timer, a watched descriptor's
// callback) runs: everything an event decides sees one instant.
//
// Thread safety: post() is safe from any thread on every implementation. now(), at(), after() and
// TimerHandle::cancel() are called only from the loop thread (or, before the loop runs, from the
// thread that owns the executor).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

namespace tempokv {

// The executor's clock: nanoseconds since the executor was created (virtual in simulation).
struct ExecClock {
  using rep = int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<ExecClock>;
  static constexpr bool is_steady = true;
};
using Duration = ExecClock::duration;
using TimePoint = ExecClock::time_point;

// Seconds as a double, for reports and estimators.
inline double to_seconds(Duration d) { return std::chrono::duration<double>(d).count(); }
inline double to_seconds(TimePoint t) { return to_seconds(t.time_since_epoch()); }
inline Duration from_seconds(double s) {
  return std::chrono::round<Duration>(std::chrono::duration<double>(s));
}

// A scheduled timer. cancel() before it fires prevents it from running; after it fired (or on an
// empty handle) cancel() does nothing. Dropping the handle does not cancel the timer.
class TimerHandle {
 public:
  TimerHandle() = default;
  explicit TimerHandle(std::shared_ptr<bool> cancelled) : cancelled_(std::move(cancelled)) {}
  void cancel() {
    if (cancelled_) *cancelled_ = true;
  }
  bool valid() const { return cancelled_ != nullptr; }

 private:
  std::shared_ptr<bool> cancelled_;
};

class Executor {
 public:
  using Task = std::function<void()>;
  virtual ~Executor() = default;

  virtual TimePoint now() const = 0;
  // Runs fn on the loop thread after the tasks already posted. Safe from any thread.
  virtual void post(Task fn) = 0;
  // Runs fn at time t (at once, after posted work, when t is not in the future). Timers with equal
  // times run in the order they were scheduled.
  virtual TimerHandle at(TimePoint t, Task fn) = 0;
  TimerHandle after(Duration d, Task fn) { return at(now() + d, std::move(fn)); }
  // True when the clock is virtual (SimExecutor).
  virtual bool simulated() const = 0;
};

}  // namespace tempokv
