#include "executor/real_executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace tempokv {
namespace {

using std::chrono::milliseconds;

TEST(RealExecutor, TimerFiresNoEarlierThanAsked) {
  RealExecutor ex;
  TimePoint start = ex.now();
  TimePoint fired{};
  ex.after(milliseconds(20), [&] {
    fired = ex.now();
    ex.stop();
  });
  ex.run();
  EXPECT_GE(fired - start, milliseconds(20));
}

TEST(RealExecutor, StopBeforeRunEndsThatRun) {
  RealExecutor ex;
  ex.stop();  // e.g. a signal handler thread that wins the race against run()
  bool timed_out = false;
  ex.after(milliseconds(2000), [&] {
    timed_out = true;
    ex.stop();
  });
  ex.run();
  EXPECT_FALSE(timed_out) << "the stop() before run() was lost";
}

TEST(RealExecutor, StopConsumedByOneRunDoesNotEndTheNext) {
  RealExecutor ex;
  ex.post([&] { ex.stop(); });
  ex.run();
  bool ran = false;
  ex.after(milliseconds(5), [&] {
    ran = true;
    ex.stop();
  });
  ex.run();
  EXPECT_TRUE(ran);
  bool done = false;
  ex.post([&] {
    done = true;
    ex.stop();  // the run ends on its predicate; the stop must not leak into the next run
  });
  EXPECT_TRUE(ex.run_until([&] { return done; }));
  bool later = false;
  ex.after(milliseconds(5), [&] { later = true; });
  EXPECT_TRUE(ex.run_until([&] { return later; }));
}

TEST(RealExecutor, ATimerDueWhenARunEndsOnItsPredicateFiresInTheNextRun) {
  // A run that ends on its predicate after reading the timer's readiness, before running the
  // due timers, must leave the timer able to wake the next run (it used to wait for some other
  // event: a test of the store hung until a 20 s timeout).
  RealExecutor ex;
  bool fired = false;
  ex.after(milliseconds(1), [&] { fired = true; });
  std::this_thread::sleep_for(milliseconds(10));  // the timer is due, its fd readable
  bool posted = false;
  ex.post([&] { posted = true; });
  ASSERT_TRUE(ex.run_until([&] { return posted; }));
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 200 && !done.load(); ++i) std::this_thread::sleep_for(milliseconds(10));
    ex.post([] {});  // wakes a run that would otherwise wait forever
  });
  TimePoint start = ex.now();
  EXPECT_TRUE(ex.run_until([&] { return fired; }));
  EXPECT_LT(ex.now() - start, milliseconds(1000)) << "the due timer waited for another event";
  done = true;
  watchdog.join();
}

TEST(RealExecutor, PostsFromOtherThreadsAllRunOnTheLoopThread) {
  RealExecutor ex;
  constexpr int kThreads = 4, kPerThread = 1000;
  int count = 0;  // touched only on the loop thread
  std::thread::id loop_id;
  bool all_on_loop = true;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        ex.post([&] {
          if (std::this_thread::get_id() != loop_id) all_on_loop = false;
          ++count;
        });
      }
    });
  }
  loop_id = std::this_thread::get_id();
  EXPECT_TRUE(ex.run_until([&] { return count == kThreads * kPerThread; }));
  for (auto& t : threads) t.join();
  EXPECT_TRUE(all_on_loop);
}

TEST(RealExecutor, CancelledTimerDoesNotRun) {
  RealExecutor ex;
  bool ran = false;
  TimerHandle h = ex.after(milliseconds(5), [&] { ran = true; });
  h.cancel();
  ex.after(milliseconds(20), [&] { ex.stop(); });
  ex.run();
  EXPECT_FALSE(ran);
}

TEST(RealExecutor, TimersRunInTimeOrder) {
  RealExecutor ex;
  std::vector<int> order;
  ex.after(milliseconds(15), [&] { order.push_back(2); });
  ex.after(milliseconds(5), [&] { order.push_back(1); });
  ex.after(milliseconds(25), [&] { ex.stop(); });
  ex.run();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace tempokv
