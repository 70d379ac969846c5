#include "executor/sim_executor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tempokv {
namespace {

using std::chrono::milliseconds;

TEST(SimExecutor, TimersFireAtTheirExactVirtualTime) {
  SimExecutor ex;
  std::vector<TimePoint> fired;
  ex.after(milliseconds(30), [&] { fired.push_back(ex.now()); });
  ex.after(milliseconds(10), [&] { fired.push_back(ex.now()); });
  ex.run();
  ASSERT_EQ(fired.size(), 2u);
  EXPECT_EQ(fired[0], TimePoint(milliseconds(10)));
  EXPECT_EQ(fired[1], TimePoint(milliseconds(30)));
  EXPECT_EQ(ex.now(), TimePoint(milliseconds(30)));
}

TEST(SimExecutor, EqualTimesRunInSchedulingOrder) {
  SimExecutor ex;
  std::string order;
  for (char c : std::string("abcdef")) ex.at(TimePoint(milliseconds(5)), [&, c] { order += c; });
  ex.post([&] { order += '0'; });
  ex.run();
  EXPECT_EQ(order, "0abcdef");
}

TEST(SimExecutor, CancelledTimerNeverRuns) {
  SimExecutor ex;
  bool ran = false;
  TimerHandle h = ex.after(milliseconds(1), [&] { ran = true; });
  h.cancel();
  ex.run();
  EXPECT_FALSE(ran);
}

TEST(SimExecutor, RunUntilStopsAtTheLimitAndAdvancesTheClock) {
  SimExecutor ex;
  int count = 0;
  ex.after(milliseconds(10), [&] { ++count; });
  ex.after(milliseconds(20), [&] { ++count; });
  EXPECT_EQ(ex.run_until(TimePoint(milliseconds(15))), 1u);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(ex.now(), TimePoint(milliseconds(15)));
  ex.run_until(TimePoint(milliseconds(20)));
  EXPECT_EQ(count, 2);
}

TEST(SimExecutor, TimerInThePastRunsNowNotBackInTime) {
  SimExecutor ex;
  ex.run_until(TimePoint(milliseconds(100)));
  TimePoint seen{};
  ex.at(TimePoint(milliseconds(50)), [&] { seen = ex.now(); });
  ex.run();
  EXPECT_EQ(seen, TimePoint(milliseconds(100)));
}

TEST(SimExecutor, TasksScheduledByTasksKeepTheirOrder) {
  SimExecutor ex;
  std::vector<int> order;
  ex.post([&] {
    order.push_back(1);
    ex.post([&] { order.push_back(3); });
    ex.after(milliseconds(0), [&] { order.push_back(4); });
  });
  ex.post([&] { order.push_back(2); });
  ex.run();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace tempokv

namespace tempokv {
namespace {

TEST(SimExecutor, CancelledTimerDoesNotAdvanceTheClock) {
  SimExecutor ex;
  ex.after(std::chrono::milliseconds(5), [] {});
  TimerHandle late = ex.after(std::chrono::milliseconds(50), [] {});
  late.cancel();
  ex.run();
  EXPECT_EQ(ex.now(), TimePoint(std::chrono::milliseconds(5)));
}

}  // namespace
}  // namespace tempokv
