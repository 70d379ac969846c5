// RealExecutor's clock within an event: it stands still while a task, a timer or a watch callback
// runs (the time the event began), moves between events and with renew_now(), and reads the
// clock outside events; clock_now() reads it always.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "executor/real_executor.h"

namespace tempokv {
namespace {

using std::chrono::milliseconds;

// Sleeps on the loop thread: time passes inside the event.
void pass(milliseconds d) { std::this_thread::sleep_for(d); }

TEST(RealExecutorClock, WithinATaskTheClockStandsStillUntilRenewed) {
  RealExecutor ex;
  TimePoint first{}, later{}, clock{}, renewed{}, next_task{};
  ex.post([&] {
    first = ex.now();
    pass(milliseconds(5));
    later = ex.now();
    clock = ex.clock_now();  // the clock itself moved
    ex.renew_now();
    renewed = ex.now();
  });
  ex.post([&] {
    next_task = ex.now();
    ex.stop();
  });
  ex.run();
  EXPECT_EQ(later, first);
  EXPECT_GE(clock - first, milliseconds(5));
  EXPECT_GE(renewed, clock);
  EXPECT_GE(next_task, renewed);
}

TEST(RealExecutorClock, TimersAndWatchCallbacksAreEventsToo) {
  RealExecutor ex;
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
  TimePoint timer_first{}, timer_later{}, watch_first{}, watch_later{};
  ex.after(milliseconds(1), [&] {
    timer_first = ex.now();
    pass(milliseconds(5));
    timer_later = ex.now();
    const char c = 'x';
    ASSERT_EQ(write(fds[1], &c, 1), 1);
  });
  ASSERT_TRUE(ex.watch(fds[0], EPOLLIN, [&](uint32_t) {
                  char c;
                  ASSERT_EQ(read(fds[0], &c, 1), 1);
                  watch_first = ex.now();
                  pass(milliseconds(5));
                  watch_later = ex.now();
                  ex.stop();
                }).is_ok());
  ex.run();
  ASSERT_TRUE(ex.unwatch(fds[0]).is_ok());
  close(fds[0]);
  close(fds[1]);
  EXPECT_EQ(timer_later, timer_first);
  EXPECT_EQ(watch_later, watch_first);
  EXPECT_GE(watch_first - timer_first, milliseconds(5));
}

TEST(RealExecutorClock, OutsideAnEventNowReadsTheClock) {
  RealExecutor ex;
  const TimePoint a = ex.now();
  ex.renew_now();  // no event: nothing to renew
  pass(milliseconds(3));
  EXPECT_GE(ex.now() - a, milliseconds(3));
}

TEST(RealExecutorClock, ATimerSetInALongEventIsDueByTheEventsStartNotDelayedByItsLength) {
  // after() counts from the event's start, and the timerfd is armed by the clock: a timer set
  // 60 ms into an event for 80 ms after its start fires about 20 ms after it was set, not 80.
  RealExecutor ex;
  std::chrono::steady_clock::time_point set_at{}, fired_at{};
  ex.post([&] {
    pass(milliseconds(60));
    ex.after(milliseconds(80), [&] {
      fired_at = std::chrono::steady_clock::now();
      ex.stop();
    });
    set_at = std::chrono::steady_clock::now();
  });
  ex.run();
  EXPECT_LT(fired_at - set_at, milliseconds(50));
}

}  // namespace
}  // namespace tempokv
