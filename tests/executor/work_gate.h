// A gate for tests that hold up work done on other threads (the store's I/O threads, the io_uring
// engine's payload-check hooks) at a chosen point: a test holds a kind of work, waits until the
// workers arrive at the gate, checks what happened meanwhile, then opens it. Any thread may call
// it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace tempokv::testing {

// Counts work that other threads do, by kind, and holds work of one kind until opened (bounded:
// work held 20 s goes on, so a gate never opened fails the test instead of hanging it).
class Gate {
 public:
  void hold(std::string what) {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = std::move(what);
  }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_.clear();
    }
    cv_.notify_all();
  }
  // Runs on the working threads.
  void arrive(std::string_view what) {
    std::unique_lock<std::mutex> lock(mu_);
    ++count_[std::string(what)];
    if (what == held_) ++waiting_;
    cv_.wait_for(lock, std::chrono::seconds(20), [&] { return held_ != what; });
    if (what == held_) --waiting_;
  }
  int count(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    return count_[what];
  }
  bool someone_waiting() {
    std::lock_guard<std::mutex> lock(mu_);
    return waiting_ > 0;
  }
  int waiting() {
    std::lock_guard<std::mutex> lock(mu_);
    return waiting_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string held_;
  int waiting_ = 0;
  std::map<std::string, int> count_;
};

}  // namespace tempokv::testing
