// Holding up the work a store does off its loop (StoreOptions::on_io_thread_for_testing): a Gate
// that counts that work by kind and holds one kind until opened, and a loop runner that notices a
// condition another thread made true.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "store/store_test_util.h"

namespace tempokv::testing {

// Counts the store's off-loop work by kind, and holds work of one kind until opened.
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
  // Runs on the store's threads.
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
