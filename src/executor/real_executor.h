// RealExecutor: the wall-clock event loop. One thread runs run(); any thread may post(). Timers
// sit in a heap and one timerfd is armed for the earliest; an eventfd wakes the loop for posts.
// File descriptors (sockets, pipes) join the same epoll set through watch(); their callbacks run
// on the loop thread like any task.
//
// The clock stands still within an event, as SimExecutor's does: while a posted task, a timer or a
// watch callback runs, now() is the time at which it began (read once), so everything one event
// decides sees one instant (a projection made at now() is reused within the event instead of
// being rebuilt because nanoseconds passed). Between events, and before run(), now() reads the
// clock. A callback that serves several events of its own (the daemon's server, one per
// message) calls renew_now() before each; a duration measured within an event reads clock_now().
//
// Thread safety: post() and stop() from any thread. at(), watch(), modify(), unwatch() and
// renew_now() only on the loop thread, or before run() on the thread that owns the executor.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tempokv/executor.h"
#include "tempokv/status.h"

namespace tempokv {

class RealExecutor final : public Executor {
 public:
  using WatchFn = std::function<void(uint32_t revents)>;

  RealExecutor();
  ~RealExecutor() override;
  RealExecutor(const RealExecutor&) = delete;
  RealExecutor& operator=(const RealExecutor&) = delete;

  TimePoint now() const override;
  // Inside an event: now() becomes the clock's time (a new event begins). Outside one: nothing.
  void renew_now();
  // The clock itself, also inside an event: for measuring how long work within one took.
  TimePoint clock_now() const;
  void post(Task fn) override;
  TimerHandle at(TimePoint t, Task fn) override;
  bool simulated() const override { return false; }

  // Calls cb(revents) on the loop thread whenever fd is ready for epoll_events (EPOLLIN, EPOLLOUT,
  // EPOLLRDHUP, EPOLLPRI; EPOLLERR and EPOLLHUP are always reported). Level-triggered: cb runs
  // again on every loop turn while the fd stays ready, so it must consume the readiness or
  // unwatch; EPOLLET, EPOLLONESHOT and EPOLLEXCLUSIVE are refused. The executor does not own fd:
  // unwatch it before closing it. InvalidArgument for a negative or already watched fd.
  Status watch(int fd, uint32_t epoll_events, WatchFn cb);
  // Changes the events a watched fd waits for, keeping its callback. NotFound when not watched.
  Status modify(int fd, uint32_t epoll_events);
  // Stops watching fd. Safe inside any watch callback, its own included: once unwatch returns no
  // callback runs for this watch, even for readiness already in the current epoll_wait batch.
  // NotFound when fd is not watched.
  Status unwatch(int fd);
  size_t watched() const { return by_fd_.size(); }

  // Runs the loop on the calling thread until stop() (from any thread, or from a task).
  void run();
  // Runs until pred() is true (checked after every task, timer and watch callback) or stop();
  // returns pred().
  bool run_until(const std::function<bool()>& pred);
  // Ends the current run; one requested while no run is active ends the next run at its start
  // (so a stop() from another thread that races ahead of run() is not lost).
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
  // One watch. The epoll event carries id, not the fd: a number reused by a new watch within the
  // same batch then finds no (or another) id, so a stale event never reaches the new callback.
  struct Watch {
    int fd;
    std::shared_ptr<WatchFn> cb;  // shared so a callback may unwatch (destroy) itself mid-call
  };
  static constexpr uint64_t kEventToken = 0;
  static constexpr uint64_t kTimerToken = 1;

  // Runs fn as one event: now() is its start time until it returns.
  template <typename Fn>
  void as_event(Fn&& fn);
  void arm_timerfd();
  void run_due_timers();
  void drain_posted();
  // Runs the callback of the watch with this id, if it is still watched.
  void dispatch(uint64_t id, uint32_t revents);

  std::chrono::steady_clock::time_point epoch_;
  int epoll_fd_ = -1;
  int event_fd_ = -1;
  int timer_fd_ = -1;
  std::optional<TimePoint> armed_for_;  // the deadline timer_fd_ is armed for; none: disarmed
  std::optional<TimePoint> event_now_;  // while an event runs: its start; loop thread only
  std::mutex mu_;                       // guards posted_
  std::vector<Task> posted_;
  std::priority_queue<Timer, std::vector<Timer>, Later> timers_;  // loop thread only
  uint64_t next_seq_ = 0;
  std::unordered_map<uint64_t, Watch> watches_;  // by id; loop thread only
  std::unordered_map<int, uint64_t> by_fd_;      // fd -> id; loop thread only
  uint64_t next_watch_id_ = kTimerToken + 1;
  std::atomic<bool> stop_{false};
};

}  // namespace tempokv
