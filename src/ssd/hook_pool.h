// HookPool: a few threads that run the per-byte work a caller attached to a completed read (the
// IoThreadHook: the store's payload checksum), so that work never holds up the thread that reaps
// completions and resubmits reads. UringEngine hands each hooked read to one of them.
//
// Tasks run in FIFO order of hand-off, several at once (one per thread); nothing orders the ends of
// two tasks. A pool of 0 threads runs each task inline in run(), on the caller's thread.
//
// Thread safety: run() may be called from any thread. The destructor runs every task already handed
// off, then joins the threads; no run() may race with it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tempokv {

class HookPool {
 public:
  explicit HookPool(uint32_t threads);
  ~HookPool();
  HookPool(const HookPool&) = delete;
  HookPool& operator=(const HookPool&) = delete;

  void run(std::function<void()> task);
  uint32_t threads() const { return static_cast<uint32_t>(threads_.size()); }

 private:
  void loop();

  std::mutex mu_;  // guards tasks_ and stopping_
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tempokv
