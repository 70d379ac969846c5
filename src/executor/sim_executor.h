// SimExecutor: virtual time and a deterministic event queue. Nothing advances the clock but
// run()/run_until()/step(); events with equal times run in the order they were scheduled, so a
// simulated scenario is exactly repeatable and tests assert exact times.
//
// post() is safe from other threads (the queue is locked), but simulated-mode components never
// use threads: the simulated SSD and transfer engines schedule their completions as timers.
#pragma once

#include <mutex>
#include <queue>
#include <vector>

#include "tempokv/executor.h"

namespace tempokv {

class SimExecutor final : public Executor {
 public:
  SimExecutor() = default;

  TimePoint now() const override { return now_; }
  void post(Task fn) override;
  TimerHandle at(TimePoint t, Task fn) override;
  bool simulated() const override { return true; }

  // Runs events until none are left. Returns the number run.
  uint64_t run();
  // Runs every event due at or before t, then sets the clock to t (if t is later).
  uint64_t run_until(TimePoint t);
  uint64_t run_for(Duration d) { return run_until(now_ + d); }
  // Runs the next event (advancing the clock to it). False when the queue is empty.
  bool step();
  bool idle() const;
  size_t pending() const;

 private:
  struct Event {
    TimePoint when;
    uint64_t seq;
    std::shared_ptr<bool> cancelled;
    Task fn;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.when != b.when ? a.when > b.when : a.seq > b.seq;
    }
  };

  TimePoint now_{};
  mutable std::mutex mu_;
  std::priority_queue<Event, std::vector<Event>, Later> events_;
  uint64_t next_seq_ = 0;
};

}  // namespace tempokv
