#include "executor/sim_executor.h"

namespace tempokv {

void SimExecutor::post(Task fn) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push(Event{now_, next_seq_++, nullptr, std::move(fn)});
}

TimerHandle SimExecutor::at(TimePoint t, Task fn) {
  auto cancelled = std::make_shared<bool>(false);
  std::lock_guard<std::mutex> lock(mu_);
  events_.push(Event{t < now_ ? now_ : t, next_seq_++, cancelled, std::move(fn)});
  return TimerHandle(std::move(cancelled));
}

bool SimExecutor::step() {
  Event ev;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A cancelled timer is dropped without moving the clock to its time.
    while (!events_.empty() && events_.top().cancelled && *events_.top().cancelled) events_.pop();
    if (events_.empty()) return false;
    ev = std::move(const_cast<Event&>(events_.top()));
    events_.pop();
  }
  now_ = ev.when;
  if (ev.cancelled) *ev.cancelled = true;  // fired: a later cancel() is a no-op
  ev.fn();
  return true;
}

uint64_t SimExecutor::run() {
  uint64_t n = 0;
  while (step()) ++n;
  return n;
}

uint64_t SimExecutor::run_until(TimePoint t) {
  uint64_t n = 0;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (!events_.empty() && events_.top().cancelled && *events_.top().cancelled) {
        events_.pop();
      }
      if (events_.empty() || events_.top().when > t) break;
    }
    step();
    ++n;
  }
  if (t > now_) now_ = t;
  return n;
}

bool SimExecutor::idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.empty();
}

size_t SimExecutor::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

}  // namespace tempokv
