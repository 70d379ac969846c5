// WriteWorker: one thread that runs the store's blocking or CPU-heavy work off the Executor's
// thread, so that it does not stall every claim behind it on the control plane: preparing large
// records (payload checksum, copies into aligned write buffers) and deleting reclaimed segment
// files (one instance each, so a slow unlink never delays a put). Jobs run in the order given;
// each touches only its own data and posts any continuation back to the Executor.
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
