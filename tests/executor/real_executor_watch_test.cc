#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "executor/real_executor.h"

namespace tempokv {
namespace {

using std::chrono::milliseconds;

// A non-blocking pipe closed at scope exit.
struct Pipe {
  Pipe() {
    int fds[2];
    EXPECT_EQ(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
    read_fd = fds[0];
    write_fd = fds[1];
  }
  ~Pipe() {
    close(read_fd);
    close(write_fd);
  }
  void put(char c = 'x') const { ASSERT_EQ(write(write_fd, &c, 1), 1); }
  int drain() const {
    char buf[64];
    ssize_t n = read(read_fd, buf, sizeof buf);
    return n < 0 ? 0 : static_cast<int>(n);
  }
  int read_fd = -1;
  int write_fd = -1;
};

TEST(RealExecutorWatch, PipeReadinessRunsTheCallbackOnTheLoopThread) {
  RealExecutor ex;
  Pipe p;
  std::thread::id cb_thread;
  uint32_t seen = 0;
  ASSERT_TRUE(ex.watch(p.read_fd, EPOLLIN, [&](uint32_t revents) {
                  cb_thread = std::this_thread::get_id();
                  seen = revents;
                  p.drain();
                  ex.stop();
                }).is_ok());
  std::thread writer([&] {
    std::this_thread::sleep_for(milliseconds(10));
    p.put();
  });
  ex.run();
  writer.join();
  EXPECT_EQ(cb_thread, std::this_thread::get_id());
  EXPECT_TRUE(seen & EPOLLIN);
}

TEST(RealExecutorWatch, LevelTriggeredCallbackRepeatsUntilDrained) {
  RealExecutor ex;
  Pipe p;
  int calls = 0;
  ASSERT_TRUE(ex.watch(p.read_fd, EPOLLIN, [&](uint32_t) {
                  if (++calls == 3) p.drain();
                }).is_ok());
  p.put();
  ex.after(milliseconds(30), [&] { ex.stop(); });
  ex.run();
  EXPECT_EQ(calls, 3);
}

TEST(RealExecutorWatch, WatchingTheSameFdTwiceIsInvalidArgument) {
  RealExecutor ex;
  Pipe p;
  ASSERT_TRUE(ex.watch(p.read_fd, EPOLLIN, [](uint32_t) {}).is_ok());
  Status again = ex.watch(p.read_fd, EPOLLIN, [](uint32_t) {});
  EXPECT_EQ(again.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(again.message().find("already watched"), std::string::npos);
}

TEST(RealExecutorWatch, EdgeTriggeredAndBadFdsAreRefused) {
  RealExecutor ex;
  Pipe p;
  EXPECT_EQ(ex.watch(p.read_fd, EPOLLIN | EPOLLET, [](uint32_t) {}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ex.watch(-1, EPOLLIN, [](uint32_t) {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ex.watch(p.read_fd, EPOLLIN, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ex.watched(), 0u);
}

TEST(RealExecutorWatch, UnwatchOfAnUnwatchedFdIsNotFound) {
  RealExecutor ex;
  Pipe p;
  EXPECT_EQ(ex.unwatch(p.read_fd).code(), StatusCode::kNotFound);
  EXPECT_EQ(ex.modify(p.read_fd, EPOLLIN).code(), StatusCode::kNotFound);
}

TEST(RealExecutorWatch, UnwatchInsideItsOwnCallbackStopsFurtherCalls) {
  RealExecutor ex;
  Pipe p;
  int calls = 0;
  // Never drains: without the unwatch a level-triggered callback would run on every turn.
  ASSERT_TRUE(ex.watch(p.read_fd, EPOLLIN, [&](uint32_t) {
                  ++calls;
                  EXPECT_TRUE(ex.unwatch(p.read_fd).is_ok());
                }).is_ok());
  p.put();
  ex.after(milliseconds(30), [&] { ex.stop(); });
  ex.run();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(ex.watched(), 0u);
}

TEST(RealExecutorWatch, UnwatchOfAnotherFdInTheSameBatchSuppressesItsCallback) {
  RealExecutor ex;
  Pipe a, b;
  // Both ready before the loop starts, so one epoll_wait reports both; whichever runs first
  // unwatches the other, and the other's event, already in the batch, must not be delivered.
  int calls_a = 0, calls_b = 0;
  ASSERT_TRUE(ex.watch(a.read_fd, EPOLLIN, [&](uint32_t) {
                  ++calls_a;
                  a.drain();
                  if (calls_b == 0) {
                    EXPECT_TRUE(ex.unwatch(b.read_fd).is_ok());
                  }
                }).is_ok());
  ASSERT_TRUE(ex.watch(b.read_fd, EPOLLIN, [&](uint32_t) {
                  ++calls_b;
                  b.drain();
                  if (calls_a == 0) {
                    EXPECT_TRUE(ex.unwatch(a.read_fd).is_ok());
                  }
                }).is_ok());
  a.put();
  b.put();
  ex.after(milliseconds(30), [&] { ex.stop(); });
  ex.run();
  EXPECT_EQ(calls_a + calls_b, 1);
  EXPECT_EQ(ex.watched(), 1u);
}

TEST(RealExecutorWatch, ReusedFdNumberInTheSameBatchGetsNoStaleEvent) {
  RealExecutor ex;
  Pipe a, b;
  // The first callback to run unwatches the other pipe and puts a fresh, empty pipe under the same
  // fd number (dup2); the stale event for the old pipe must not reach the new callback.
  int first = 0, stale = 0;
  int fresh_write = -1;
  auto replace = [&](Pipe& other) {
    EXPECT_TRUE(ex.unwatch(other.read_fd).is_ok());
    int fresh[2];
    ASSERT_EQ(pipe2(fresh, O_NONBLOCK | O_CLOEXEC), 0);
    ASSERT_EQ(dup2(fresh[0], other.read_fd), other.read_fd);
    close(fresh[0]);
    fresh_write = fresh[1];
    EXPECT_TRUE(ex.watch(other.read_fd, EPOLLIN, [&](uint32_t) { ++stale; }).is_ok());
  };
  ASSERT_TRUE(ex.watch(a.read_fd, EPOLLIN, [&](uint32_t) {
                  a.drain();
                  if (first++ == 0) replace(b);
                }).is_ok());
  ASSERT_TRUE(ex.watch(b.read_fd, EPOLLIN, [&](uint32_t) {
                  b.drain();
                  if (first++ == 0) replace(a);
                }).is_ok());
  a.put();
  b.put();
  ex.after(milliseconds(30), [&] { ex.stop(); });
  ex.run();
  EXPECT_EQ(stale, 0);  // nothing was ever written to the fresh pipe
  EXPECT_EQ(ex.watched(), 2u);
  close(fresh_write);
}

TEST(RealExecutorWatch, ModifySwitchesTheEventsAndKeepsTheCallback) {
  RealExecutor ex;
  Pipe p;
  std::vector<uint32_t> seen;
  // The write end is always writable; watch it for EPOLLIN first (never ready), then EPOLLOUT.
  ASSERT_TRUE(ex.watch(p.write_fd, EPOLLIN, [&](uint32_t revents) {
                  seen.push_back(revents);
                  EXPECT_TRUE(ex.unwatch(p.write_fd).is_ok());
                }).is_ok());
  ex.after(milliseconds(10), [&] {
    EXPECT_TRUE(seen.empty());
    EXPECT_TRUE(ex.modify(p.write_fd, EPOLLOUT).is_ok());
  });
  ex.after(milliseconds(30), [&] { ex.stop(); });
  ex.run();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen[0] & EPOLLOUT);
}

TEST(RealExecutorWatch, RunUntilReturnsWhenAWatchCallbackMakesThePredicateTrue) {
  RealExecutor ex;
  Pipe p;
  int bytes = 0;
  ASSERT_TRUE(ex.watch(p.read_fd, EPOLLIN, [&](uint32_t) { bytes += p.drain(); }).is_ok());
  std::thread writer([&] {
    for (int i = 0; i < 3; ++i) {
      std::this_thread::sleep_for(milliseconds(5));
      p.put();
    }
  });
  EXPECT_TRUE(ex.run_until([&] { return bytes == 3; }));
  writer.join();
  EXPECT_EQ(bytes, 3);
  EXPECT_TRUE(ex.unwatch(p.read_fd).is_ok());
}

TEST(RealExecutorWatch, HangupIsReportedWithoutAskingForIt) {
  RealExecutor ex;
  Pipe p;
  uint32_t seen = 0;
  ASSERT_TRUE(ex.watch(p.read_fd, EPOLLIN, [&](uint32_t revents) {
                  seen = revents;
                  EXPECT_TRUE(ex.unwatch(p.read_fd).is_ok());
                  ex.stop();
                }).is_ok());
  close(p.write_fd);
  p.write_fd = dup(p.read_fd);
  ex.run();
  EXPECT_TRUE(seen & EPOLLHUP);
}

}  // namespace
}  // namespace tempokv
