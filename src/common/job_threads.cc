#include "common/job_threads.h"

#include <utility>

namespace tempokv {

JobThreads::~JobThreads() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();  // started under mu_; none starts any more
}

void JobThreads::run(std::function<void()> job) {
  if (max_threads_ == 0) {
    job();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
    if (threads_.size() < max_threads_) threads_.emplace_back([this] { loop(); });
  }
  cv_.notify_one();
}

void JobThreads::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, and every job given has run
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    // Its captures go before the lock is taken again: releasing one may queue a job (run()).
    job = nullptr;
    lock.lock();
  }
}

}  // namespace tempokv
