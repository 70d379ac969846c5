// RealExecutor: the wall-clock event loop. One thread runs run(); any thread may post(). Timers
// sit in a heap and one timerfd is armed for the earliest; an eventfd wakes the loop for posts.
#pragma once

#include <atomic>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

#include "tempokv/executor.h"

namespace tempokv {

class RealExecutor final : public Executor {
 public:
  RealExecutor();
  ~RealExecutor() override;
  RealExecutor(const RealExecutor&) = delete;
  RealExecutor& operator=(const RealExecutor&) = delete;

  TimePoint now() const override;
  void post(Task fn) override;
  TimerHandle at(TimePoint t, Task fn) override;
  bool simulated() const override { return false; }

  // Runs the loop on the calling thread until stop() (from any thread, or from a task).
  void run();
  // Runs until pred() is true (checked after every task) or stop(); returns pred().
  bool run_until(const std::function<bool()>& pred);
  void stop();

 private:
  struct Timer {
    TimePoint when;
    uint64_t seq;
    std::shared_ptr<bool> cancelled;
    Task fn;
  };
  struct Later {
    bool operator()(const Timer& a, const Timer& b) const {
      return a.when != b.when ? a.when > b.when : a.seq > b.seq;
    }
  };
  void arm_timerfd();
  void run_due_timers();
  void drain_posted();

  std::chrono::steady_clock::time_point epoch_;
  int epoll_fd_ = -1;
  int event_fd_ = -1;
  int timer_fd_ = -1;
  std::mutex mu_;  // guards posted_
  std::vector<Task> posted_;
  std::priority_queue<Timer, std::vector<Timer>, Later> timers_;  // loop thread only
  uint64_t next_seq_ = 0;
  std::atomic<bool> stop_{false};
};

}  // namespace tempokv
