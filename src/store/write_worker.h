// WriteWorker: one thread that prepares large records off the Executor's thread — the payload
// checksum and the copies into aligned write buffers — so that a put of many MiB does not stall
// every claim behind it on the control plane. Jobs run in the order given; each touches only its
// own PendingWrite and posts its continuation back to the Executor.
//
// Thread-safe. The thread starts with the first job; the destructor runs the jobs already given,
// then joins.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace tempokv::store {

class WriteWorker {
 public:
  WriteWorker() = default;
  ~WriteWorker();
  WriteWorker(const WriteWorker&) = delete;
  WriteWorker& operator=(const WriteWorker&) = delete;

  void run(std::function<void()> job);

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tempokv::store
