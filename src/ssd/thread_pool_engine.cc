#include "ssd/thread_pool_engine.h"

#include <unistd.h>

#include <cerrno>

#include "common/file_io.h"
#include "common/units.h"

namespace tempokv {

Result<std::unique_ptr<ThreadPoolEngine>> ThreadPoolEngine::create(
    Executor& executor, const SsdEngineOptions& options) {
  TEMPOKV_RETURN_IF_ERROR(options.validate());
  return std::unique_ptr<ThreadPoolEngine>(new ThreadPoolEngine(executor, options));
}

ThreadPoolEngine::ThreadPoolEngine(Executor& executor, const SsdEngineOptions& options)
    : executor_(executor), options_(options) {
  workers_.reserve(options_.threads);
  for (uint32_t i = 0; i < options_.threads; ++i) {
    workers_.emplace_back([this] { worker_loop(); });
  }
}

ThreadPoolEngine::~ThreadPoolEngine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPoolEngine::read(FileId file, uint64_t offset, void* buf, size_t len, IoCallback cb,
                            IoThreadHook on_io_thread) {
  submit(IoOp::kRead, file, offset, static_cast<std::byte*>(buf), len, std::move(cb),
         std::move(on_io_thread));
}

void ThreadPoolEngine::write(FileId file, uint64_t offset, const void* buf, size_t len,
                             IoCallback cb) {
  // pwrite only reads the buffer; the cast lets reads and writes share one job type.
  submit(IoOp::kWrite, file, offset, static_cast<std::byte*>(const_cast<void*>(buf)), len,
         std::move(cb), nullptr);
}

void ThreadPoolEngine::sync(FileId file, IoCallback cb) {
  submit(IoOp::kSync, file, 0, nullptr, 0, std::move(cb), nullptr);
}

void ThreadPoolEngine::submit(IoOp op, FileId file, uint64_t offset, std::byte* buf, size_t len,
                              IoCallback cb, IoThreadHook hook) {
  FileTable::Entry entry;
  Status st = check_request(name(), files_, op, file, offset, buf, len, options_.direct, &entry);
  if (!st.is_ok()) {
    fail_early(op, std::move(st), std::move(cb));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.in_flight;
    jobs_.push_back(Job{op, file, entry.fd, offset, buf, len, std::move(cb), std::move(hook)});
  }
  cv_.notify_one();
}

void ThreadPoolEngine::fail_early(IoOp op, Status status, IoCallback cb) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.errors;
    if (op == IoOp::kRead) ++stats_.reads;
    if (op == IoOp::kWrite) ++stats_.writes;
    if (op == IoOp::kSync) ++stats_.syncs;
  }
  executor_.post([cb = std::move(cb), status = std::move(status)] { cb(status); });
}

void ThreadPoolEngine::worker_loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping and drained
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    Result<size_t> result = run_job(job);
    if (result.is_ok() && job.hook) {
      Status st = job.hook(*result);
      if (!st.is_ok()) result = std::move(st);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      --stats_.in_flight;
      if (job.op == IoOp::kRead) ++stats_.reads;
      if (job.op == IoOp::kWrite) ++stats_.writes;
      if (job.op == IoOp::kSync) ++stats_.syncs;
      if (!result.is_ok()) {
        ++stats_.errors;
      } else if (job.op == IoOp::kRead) {
        stats_.bytes_read += *result;
      } else if (job.op == IoOp::kWrite) {
        stats_.bytes_written += *result;
      }
    }
    executor_.post([cb = std::move(job.cb), result = std::move(result)] { cb(result); });
  }
}

Result<size_t> ThreadPoolEngine::run_job(const Job& job) const {
  if (job.op == IoOp::kSync) {
    while (fdatasync(job.fd) != 0) {
      if (errno != EINTR) {
        return Status::from_errno(errno, describe_io(name(), job.op, job.file, 0, 0));
      }
    }
    return size_t{0};
  }
  // Short only at end of file.
  const RangeIo r = job.op == IoOp::kRead
                        ? pread_range(job.fd, job.buf, job.len, job.offset, options_.direct)
                        : pwrite_range(job.fd, job.buf, job.len, job.offset, options_.direct);
  if (r.error != 0) return r.result(describe_io(name(), job.op, job.file, job.offset, job.len));
  return r.bytes;
}

SsdEngineStats ThreadPoolEngine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace tempokv
