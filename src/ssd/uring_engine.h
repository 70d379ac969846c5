// UringEngine: the SsdEngine on io_uring, for O_DIRECT files. Many requests are in flight at
// once; transfers into a buffer declared with register_buffer use the registered-buffer opcodes
// (READ_FIXED/WRITE_FIXED), and added files sit in the ring's registered-file table
// (IOSQE_FIXED_FILE). Either registration that the kernel or RLIMIT_MEMLOCK refuses falls back
// to plain requests and says so once on stderr.
//
// Submission: callers' threads push requests onto a FIFO overflow queue under one mutex and move
// as many as fit into the SQ, never more than the CQ can hold; the rest wait until completions
// free room, so a full ring never fails a request. A submit the kernel refuses for the moment
// (EAGAIN, EBUSY) is retried by the completion thread, never by sleeping on the caller's thread.
// A completion thread reaps CQEs, resubmits the
// remainder of short transfers (and requests that got EAGAIN/EINTR) and posts the callback to the
// Executor. A read with an IoThreadHook (the store's checksum) goes from there to a JobThreads of
// options.hook_threads threads, which runs the hook and then posts the callback, so hashing a
// large object never keeps the completion thread from reaping and resubmitting the others (with
// 0 hook threads the completion thread runs it, as before). Sync is IORING_OP_FSYNC with
// IORING_FSYNC_DATASYNC.
//
// Thread safety: every public method is thread-safe. The destructor waits for every submitted
// request to complete (hook run, callback posted), then stops the completion and hook threads.
#pragma once

#include <liburing.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ssd/file_table.h"
#include "ssd/fixed_buffer_table.h"
#include "common/job_threads.h"
#include "ssd/io_args.h"
#include "ssd/ssd_engine.h"

namespace tempokv {

class UringEngine final : public SsdEngine {
 public:
  // Unavailable when the kernel refuses io_uring (ENOSYS, EPERM: seccomp, io_uring_disabled), so
  // the factory can fall back to the thread pool.
  static Result<std::unique_ptr<UringEngine>> create(Executor& executor,
                                                     const SsdEngineOptions& options);
  ~UringEngine() override;
  UringEngine(const UringEngine&) = delete;
  UringEngine& operator=(const UringEngine&) = delete;

  std::string_view name() const override { return "uring"; }
  bool direct() const override { return options_.direct; }
  Result<FileId> add_file(int fd) override;
  void remove_file(FileId file) override;
  Status register_buffer(void* base, size_t bytes) override;
  void unregister_buffer(void* base) override;

  void read(FileId file, uint64_t offset, void* buf, size_t len, IoCallback cb,
            IoThreadHook on_io_thread = nullptr) override;
  void write(FileId file, uint64_t offset, const void* buf, size_t len, IoCallback cb) override;
  void sync(FileId file, IoCallback cb) override;

  SsdEngineStats stats() const override;

  bool files_registered() const { return files_registered_; }
  bool buffers_registered() const { return buffers_.enabled(); }
  // Replaces io_uring_submit (tests: a kernel that answers EAGAIN for a while).
  void set_submit_for_testing(std::function<int(io_uring*)> submit);
  // Behaves as on a kernel without IORING_FEAT_EXT_ARG (tests): the completion thread waits by
  // polling the ring's descriptor instead of io_uring_wait_cqe_timeout.
  void disable_ext_arg_for_testing();

 private:
  struct Request;

  UringEngine(Executor& executor, const SsdEngineOptions& options);
  void submit(IoOp op, FileId file, uint64_t offset, std::byte* buf, size_t len, IoCallback cb,
              IoThreadHook hook);
  void fail_early(IoOp op, Status status, IoCallback cb);
  // Moves overflow_ into the SQ and submits (`lock` holds mu_). When the kernel answers EAGAIN or
  // EBUSY the SQEs stay in the ring, submit_pending_ is set and the completion thread retries
  // after a short wait, off the caller's thread (usually the control loop), with or without
  // IORING_FEAT_EXT_ARG: nothing ever sleeps in here.
  void flush_locked(std::unique_lock<std::mutex>& lock);
  void prep(io_uring_sqe* sqe, Request* req);
  void completion_loop();
  // Decides what a CQE means for its request: done (appended to `done`) or to be resubmitted.
  // Called with mu_ held.
  void handle_cqe(Request* req, int res, std::vector<Request*>& retry, std::vector<Request*>& done);
  // Hands a request whose transfer is over to the hook pool when it has a hook to run, else
  // completes it at once.
  void finish(Request* req);
  // Runs the hook (if the transfer succeeded), counts the request and posts its callback.
  void complete(Request* req);

  Executor& executor_;
  const SsdEngineOptions options_;
  io_uring ring_{};
  bool ring_ready_ = false;
  unsigned cq_entries_ = 0;
  bool files_registered_ = false;  // set before the engine is shared
  FileTable files_;
  FixedBufferTable buffers_;

  mutable std::mutex mu_;  // guards the SQ, overflow_, in_kernel_, outstanding_ and stats_
  std::condition_variable idle_cv_;
  std::deque<Request*> overflow_;  // submitted by callers, not yet in the SQ
  unsigned in_kernel_ = 0;         // in the SQ or the kernel, CQE not yet reaped
  uint64_t outstanding_ = 0;       // submitted and callback not yet posted
  bool submit_pending_ = false;    // the kernel refused a submit for now: the completer retries
  std::atomic<bool> wait_timeout_ok_{false};  // IORING_FEAT_EXT_ARG: the completer may wait with a timeout
  std::function<int(io_uring*)> submit_fn_;  // io_uring_submit unless a test replaced it
  SsdEngineStats stats_;
  std::thread completer_;
  std::unique_ptr<JobThreads> hooks_;  // made before completer_ starts, reset after it stops
};

}  // namespace tempokv
