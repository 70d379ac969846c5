// ThreadPoolEngine: the SsdEngine for kernels without io_uring. A fixed pool of worker threads
// runs blocking pread/pwrite/fdatasync; whether the transfer is O_DIRECT is decided by how the
// caller opened the file, and options.direct only decides whether the 4 KiB alignment rule is
// enforced (it must be when the files are O_DIRECT).
//
// Short transfers are retried for the remainder until done, end of file (a 0-byte transfer: the
// bytes so far are reported) or an error; EINTR and EAGAIN are retried. The IoThreadHook runs on
// the worker that did the I/O, then the callback is post()ed to the Executor.
//
// Thread safety: every public method is thread-safe. The destructor lets queued and running
// requests finish (their callbacks are posted) before it joins the workers.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ssd/file_table.h"
#include "ssd/io_args.h"
#include "ssd/ssd_engine.h"

namespace tempokv {

class ThreadPoolEngine final : public SsdEngine {
 public:
  static Result<std::unique_ptr<ThreadPoolEngine>> create(Executor& executor,
                                                          const SsdEngineOptions& options);
  ~ThreadPoolEngine() override;
  ThreadPoolEngine(const ThreadPoolEngine&) = delete;
  ThreadPoolEngine& operator=(const ThreadPoolEngine&) = delete;

  std::string_view name() const override { return "threadpool"; }
  bool direct() const override { return options_.direct; }
  Result<FileId> add_file(int fd) override { return files_.add(fd); }
  void remove_file(FileId file) override { files_.remove(file); }
  // Nothing to register for pread; always OK.
  Status register_buffer(void*, size_t) override { return Status::ok(); }
  void unregister_buffer(void*) override {}

  void read(FileId file, uint64_t offset, void* buf, size_t len, IoCallback cb,
            IoThreadHook on_io_thread = nullptr) override;
  void write(FileId file, uint64_t offset, const void* buf, size_t len, IoCallback cb) override;
  void sync(FileId file, IoCallback cb) override;

  SsdEngineStats stats() const override;

 private:
  struct Job {
    IoOp op;
    FileId file;
    int fd;
    uint64_t offset;
    std::byte* buf;
    size_t len;
    IoCallback cb;
    IoThreadHook hook;
  };

  ThreadPoolEngine(Executor& executor, const SsdEngineOptions& options);
  void submit(IoOp op, FileId file, uint64_t offset, std::byte* buf, size_t len, IoCallback cb,
              IoThreadHook hook);
  // Completes a request that never reached a worker (bad arguments): counts it and posts.
  void fail_early(IoOp op, Status status, IoCallback cb);
  void worker_loop();
  Result<size_t> run_job(const Job& job) const;

  Executor& executor_;
  const SsdEngineOptions options_;
  FileTable files_;

  mutable std::mutex mu_;  // guards jobs_, stopping_ and stats_
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  SsdEngineStats stats_;
  std::vector<std::thread> workers_;
};

}  // namespace tempokv
