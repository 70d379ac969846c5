#include "executor/real_executor.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace tempokv {
namespace {

void die(const char* what) {
  std::fprintf(stderr, "tempokv: RealExecutor: %s: %s\n", what, std::strerror(errno));
  std::abort();
}

}  // namespace

RealExecutor::RealExecutor() : epoch_(std::chrono::steady_clock::now()) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (epoll_fd_ < 0 || event_fd_ < 0 || timer_fd_ < 0) die("creating epoll/eventfd/timerfd");
  for (auto [fd, token] : {std::pair{event_fd_, kEventToken}, std::pair{timer_fd_, kTimerToken}}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = token;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) die("epoll_ctl");
  }
}

RealExecutor::~RealExecutor() {
  close(timer_fd_);
  close(event_fd_);
  close(epoll_fd_);
}

TimePoint RealExecutor::clock_now() const {
  return TimePoint(std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - epoch_));
}

TimePoint RealExecutor::now() const { return event_now_ ? *event_now_ : clock_now(); }

void RealExecutor::renew_now() {
  if (event_now_) event_now_ = clock_now();
}

template <typename Fn>
void RealExecutor::as_event(Fn&& fn) {
  event_now_ = clock_now();
  struct End {
    std::optional<TimePoint>& at;
    ~End() { at.reset(); }
  } end{event_now_};
  fn();
}

void RealExecutor::post(Task fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    posted_.push_back(std::move(fn));
  }
  uint64_t one = 1;
  // A full counter (impossible in practice) still leaves the loop readable, so ignore EAGAIN.
  [[maybe_unused]] ssize_t n = write(event_fd_, &one, sizeof one);
}

TimerHandle RealExecutor::at(TimePoint t, Task fn) {
  auto cancelled = std::make_shared<bool>(false);
  timers_.push(Timer{t, next_seq_++, cancelled, std::move(fn)});
  arm_timerfd();  // a no-op unless t is the new earliest
  return TimerHandle(std::move(cancelled));
}

void RealExecutor::arm_timerfd() {
  // Already armed for the earliest deadline (or disarmed with none): a timerfd_settime per loop
  // turn and per timer was most of the loop's own system time.
  std::optional<TimePoint> want;
  if (!timers_.empty()) want = timers_.top().when;
  if (want == armed_for_) return;
  itimerspec spec{};
  if (!timers_.empty()) {
    Duration wait = timers_.top().when - clock_now();  // not the event's start: the clock's
    if (wait < Duration(1)) wait = Duration(1);  // zero would disarm the timer
    spec.it_value.tv_sec = static_cast<time_t>(wait.count() / 1'000'000'000);
    spec.it_value.tv_nsec = static_cast<long>(wait.count() % 1'000'000'000);
  }
  if (timerfd_settime(timer_fd_, 0, &spec, nullptr) != 0) die("timerfd_settime");
  armed_for_ = want;
}

void RealExecutor::drain_posted() {
  std::vector<Task> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(posted_);
  }
  for (auto& fn : batch) as_event(fn);
}

void RealExecutor::run_due_timers() {
  TimePoint t = clock_now();
  while (!timers_.empty() && timers_.top().when <= t) {
    Timer timer = std::move(const_cast<Timer&>(timers_.top()));
    timers_.pop();
    if (!*timer.cancelled) {
      *timer.cancelled = true;  // fired: a later cancel() is a no-op
      as_event(timer.fn);
    }
    if (stop_.load(std::memory_order_relaxed)) break;
  }
  arm_timerfd();
}

Status RealExecutor::watch(int fd, uint32_t epoll_events, WatchFn cb) {
  // Level-triggered only: run_until may return between two callbacks of one batch, and only
  // level-triggered readiness is reported again on the next epoll_wait.
  constexpr uint32_t kAllowed = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI | EPOLLERR | EPOLLHUP;
  const std::string what = "RealExecutor::watch(fd " + std::to_string(fd) + ")";
  if (fd < 0) return Status::invalid_argument(what + ": negative fd");
  if (fd == epoll_fd_ || fd == event_fd_ || fd == timer_fd_) {
    return Status::invalid_argument(what + ": the fd is the executor's own");
  }
  if (!cb) return Status::invalid_argument(what + ": empty callback");
  if ((epoll_events & ~kAllowed) != 0) {
    return Status::invalid_argument(what + ": events " + std::to_string(epoll_events) +
                                    " are not a level-triggered set of EPOLLIN, EPOLLOUT, "
                                    "EPOLLRDHUP, EPOLLPRI");
  }
  if (by_fd_.contains(fd)) return Status::invalid_argument(what + ": already watched");
  const uint64_t id = next_watch_id_++;
  epoll_event ev{};
  ev.events = epoll_events;
  ev.data.u64 = id;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) return Status::from_errno(errno, what);
  watches_.emplace(id, Watch{fd, std::make_shared<WatchFn>(std::move(cb))});
  by_fd_.emplace(fd, id);
  return Status::ok();
}

Status RealExecutor::modify(int fd, uint32_t epoll_events) {
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end()) {
    return Status::not_found("RealExecutor::modify: fd " + std::to_string(fd) + " is not watched");
  }
  epoll_event ev{};
  ev.events = epoll_events;
  ev.data.u64 = it->second;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0) {
    return Status::from_errno(errno, "RealExecutor::modify(fd " + std::to_string(fd) + ")");
  }
  return Status::ok();
}

Status RealExecutor::unwatch(int fd) {
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end()) {
    return Status::not_found("RealExecutor::unwatch: fd " + std::to_string(fd) + " is not watched");
  }
  // Fails only when fd was already closed, which removed it from the set anyway.
  [[maybe_unused]] int rc = epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  // Erasing the id is what stops a pending event of this batch: dispatch() finds nothing.
  watches_.erase(it->second);
  by_fd_.erase(it);
  return Status::ok();
}

void RealExecutor::dispatch(uint64_t id, uint32_t revents) {
  auto it = watches_.find(id);
  if (it == watches_.end()) return;
  std::shared_ptr<WatchFn> cb = it->second.cb;  // outlives an unwatch by the callback itself
  as_event([&] { (*cb)(revents); });
}

void RealExecutor::run() {
  run_until([] { return false; });
}

bool RealExecutor::run_until(const std::function<bool()>& pred) {
  // A stop() ends the run it interrupts, or the next one when it came while none was running; a
  // run ends by consuming any stop requested while it ran.
  struct ConsumeStop {
    std::atomic<bool>& stop;
    ~ConsumeStop() { stop.store(false); }
  } consume{stop_};
  constexpr int kBatch = 64;
  epoll_event events[kBatch];
  while (!stop_.load()) {
    if (pred()) return true;
    int n = epoll_wait(epoll_fd_, events, kBatch, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait");
    }
    uint64_t count;
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == kEventToken) {
        [[maybe_unused]] ssize_t r = read(event_fd_, &count, sizeof count);
      } else if (events[i].data.u64 == kTimerToken) {
        [[maybe_unused]] ssize_t r = read(timer_fd_, &count, sizeof count);
        armed_for_.reset();  // it expired: a one-shot timerfd is disarmed
      }
    }
    // Returning before run_due_timers() leaves the timers that are due to the next run: the
    // timerfd's readiness was read above, so it is armed again for them (else that run would
    // sleep until some other event).
    drain_posted();
    if (pred()) {
      arm_timerfd();
      return true;
    }
    for (int i = 0; i < n && !stop_.load(std::memory_order_relaxed); ++i) {
      if (events[i].data.u64 <= kTimerToken) continue;
      dispatch(events[i].data.u64, events[i].events);
      // Returning mid-batch loses nothing: the rest are level-triggered and are reported again.
      if (pred()) {
        arm_timerfd();
        return true;
      }
    }
    run_due_timers();
  }
  return pred();
}

void RealExecutor::stop() {
  stop_.store(true);
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(event_fd_, &one, sizeof one);
}

}  // namespace tempokv
