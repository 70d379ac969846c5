#include "executor/real_executor.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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
  for (int fd : {event_fd_, timer_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) die("epoll_ctl");
  }
}

RealExecutor::~RealExecutor() {
  close(timer_fd_);
  close(event_fd_);
  close(epoll_fd_);
}

TimePoint RealExecutor::now() const {
  return TimePoint(std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - epoch_));
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
  bool earliest = timers_.empty() || t < timers_.top().when;
  timers_.push(Timer{t, next_seq_++, cancelled, std::move(fn)});
  if (earliest) arm_timerfd();
  return TimerHandle(std::move(cancelled));
}

void RealExecutor::arm_timerfd() {
  itimerspec spec{};
  if (!timers_.empty()) {
    Duration wait = timers_.top().when - now();
    if (wait < Duration(1)) wait = Duration(1);  // zero would disarm the timer
    spec.it_value.tv_sec = static_cast<time_t>(wait.count() / 1'000'000'000);
    spec.it_value.tv_nsec = static_cast<long>(wait.count() % 1'000'000'000);
  }
  if (timerfd_settime(timer_fd_, 0, &spec, nullptr) != 0) die("timerfd_settime");
}

void RealExecutor::drain_posted() {
  std::vector<Task> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(posted_);
  }
  for (auto& fn : batch) {
    fn();
  }
}

void RealExecutor::run_due_timers() {
  TimePoint t = now();
  while (!timers_.empty() && timers_.top().when <= t) {
    Timer timer = std::move(const_cast<Timer&>(timers_.top()));
    timers_.pop();
    if (!*timer.cancelled) {
      *timer.cancelled = true;  // fired: a later cancel() is a no-op
      timer.fn();
    }
    if (stop_.load(std::memory_order_relaxed)) break;
  }
  arm_timerfd();
}

void RealExecutor::run() {
  run_until([] { return false; });
}

bool RealExecutor::run_until(const std::function<bool()>& pred) {
  stop_.store(false);
  while (!stop_.load()) {
    if (pred()) return true;
    epoll_event events[2];
    int n = epoll_wait(epoll_fd_, events, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait");
    }
    uint64_t count;
    [[maybe_unused]] ssize_t r1 = read(event_fd_, &count, sizeof count);
    [[maybe_unused]] ssize_t r2 = read(timer_fd_, &count, sizeof count);
    drain_posted();
    if (pred()) return true;
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
