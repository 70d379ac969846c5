// JobThreads: a few threads that run blocking or CPU-heavy jobs off a thread that must not stall
// (the Executor's, or the io_uring engine's completion thread). Its users: the store's write
// worker, segment creator and unlinker (one thread each: a slow unlink never delays a put) and
// UringEngine's payload checks of completed reads (SsdEngineOptions::hook_threads).
//
// Jobs start in the order given, up to one per thread at once; with more than one thread nothing
// orders their ends. Threads start with the first job. With 0 threads run() runs the job inline,
// on the caller's thread. Each job touches only its own data and posts any continuation itself.
//
// Thread safety: run() may be called from any thread. The destructor runs every job already given,
// then joins; no run() may race with it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tempokv {

class JobThreads {
 public:
  explicit JobThreads(uint32_t threads = 1) : max_threads_(threads) {}
  ~JobThreads();
  JobThreads(const JobThreads&) = delete;
  JobThreads& operator=(const JobThreads&) = delete;

  void run(std::function<void()> job);
  uint32_t max_threads() const { return max_threads_; }

 private:
  void loop();

  const uint32_t max_threads_;
  std::mutex mu_;  // guards jobs_, stopping_ and threads_
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tempokv
