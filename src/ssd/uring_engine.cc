#include "ssd/uring_engine.h"

#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/units.h"

namespace tempokv {
namespace {

constexpr uint32_t kFixedFileSlots = 1024;
constexpr uint32_t kFixedBufferSlots = 256;
// Linux moves at most ~2 GiB per read; larger requests go as several SQEs via the short-transfer
// path.
constexpr size_t kMaxBytesPerSqe = size_t{1} << 30;
constexpr int kMaxRetries = 1000;  // EAGAIN/EINTR resubmissions of one request

std::once_flag g_files_notice, g_buffers_notice, g_register_notice, g_submit_notice, g_wait_notice;

// Registered buffers are pinned and charged to RLIMIT_MEMLOCK (unless the process has
// CAP_IPC_LOCK), so ask for as much as we may: unlimited when privileged, else the hard limit.
void raise_memlock_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_MEMLOCK, &lim) != 0) return;
  rlimit want{RLIM_INFINITY, RLIM_INFINITY};
  if (setrlimit(RLIMIT_MEMLOCK, &want) == 0) return;
  if (lim.rlim_cur != lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_MEMLOCK, &lim);
  }
}

}  // namespace

struct UringEngine::Request {
  IoOp op;
  FileId file;
  FileTable::Entry entry;
  uint64_t offset;
  std::byte* buf;
  size_t len;
  int buf_index;  // registered-buffer slot, or -1
  IoCallback cb;
  IoThreadHook hook;
  size_t done = 0;
  int retries = 0;
  Status error;
};

Result<std::unique_ptr<UringEngine>> UringEngine::create(Executor& executor,
                                                         const SsdEngineOptions& options) {
  TEMPOKV_RETURN_IF_ERROR(options.validate());
  raise_memlock_limit();
  std::unique_ptr<UringEngine> engine(new UringEngine(executor, options));
  int rc = io_uring_queue_init(options.queue_depth, &engine->ring_, 0);
  if (rc < 0) {
    return Status::unavailable("io_uring_queue_init(" + std::to_string(options.queue_depth) +
                               " entries): " + std::strerror(-rc));
  }
  engine->ring_ready_ = true;
  engine->cq_entries_ = engine->ring_.cq.ring_entries;
  // Without EXT_ARG the completion thread waits by polling the ring's descriptor instead.
  engine->wait_timeout_ok_ = (engine->ring_.features & IORING_FEAT_EXT_ARG) != 0;
  engine->submit_fn_ = [](io_uring* ring) { return io_uring_submit(ring); };
  rc = io_uring_register_files_sparse(&engine->ring_, kFixedFileSlots);
  if (rc == 0) {
    engine->files_registered_ = true;
  } else {
    notice_once(g_files_notice, std::string("io_uring registered files unavailable (") +
                                    std::strerror(-rc) + "); using plain file descriptors");
  }
  if (options.register_buffers) {
    Status st = engine->buffers_.init(&engine->ring_, kFixedBufferSlots);
    if (!st.is_ok()) {
      notice_once(g_buffers_notice, "io_uring registered buffers unavailable (" + st.to_string() +
                                        "); using plain reads and writes");
    }
  }
  engine->hooks_ = std::make_unique<JobThreads>(options.hook_threads);
  engine->completer_ = std::thread([e = engine.get()] { e->completion_loop(); });
  return engine;
}

UringEngine::UringEngine(Executor& executor, const SsdEngineOptions& options)
    : executor_(executor), options_(options) {}

UringEngine::~UringEngine() {
  if (!ring_ready_) return;
  {
    std::unique_lock<std::mutex> lock(mu_);
    idle_cv_.wait(lock, [&] { return outstanding_ == 0; });
    // A NOP with null user data tells the completion thread to stop.
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    while (sqe == nullptr) {
      io_uring_submit(&ring_);
      sqe = io_uring_get_sqe(&ring_);
    }
    io_uring_prep_nop(sqe);
    io_uring_sqe_set_data(sqe, nullptr);
    while (io_uring_submit(&ring_) < 0) {
    }
  }
  completer_.join();
  hooks_.reset();  // idle: every hook ran before outstanding_ reached 0
  io_uring_queue_exit(&ring_);
}

Result<FileId> UringEngine::add_file(int fd) {
  TEMPOKV_ASSIGN_OR_RETURN(FileId id, files_.add(fd));
  if (files_registered_ && id < kFixedFileSlots) {
    int rc = io_uring_register_files_update(&ring_, id, &fd, 1);
    if (rc == 1) {
      files_.set_registered(id, true);
    } else {
      notice_once(g_register_notice, "registering file descriptor " + std::to_string(fd) +
                                         " with io_uring failed (" + std::strerror(-rc) +
                                         "); using the plain descriptor");
    }
  }
  return id;
}

void UringEngine::remove_file(FileId file) {
  if (files_.get(file).registered) {
    int none = -1;
    [[maybe_unused]] int rc = io_uring_register_files_update(&ring_, file, &none, 1);
  }
  files_.remove(file);
}

Status UringEngine::register_buffer(void* base, size_t bytes) {
  if (!options_.register_buffers || !buffers_.enabled()) return Status::ok();
  Status st = buffers_.add(base, bytes);
  if (!st.is_ok()) {
    notice_once(g_register_notice,
                "io_uring buffer registration failed (" + st.to_string() +
                    "); transfers into unregistered buffers use plain reads and writes");
  }
  return Status::ok();
}

void UringEngine::unregister_buffer(void* base) { buffers_.remove(base); }

void UringEngine::read(FileId file, uint64_t offset, void* buf, size_t len, IoCallback cb,
                       IoThreadHook on_io_thread) {
  submit(IoOp::kRead, file, offset, static_cast<std::byte*>(buf), len, std::move(cb),
         std::move(on_io_thread));
}

void UringEngine::write(FileId file, uint64_t offset, const void* buf, size_t len, IoCallback cb) {
  // The kernel only reads a write's buffer; the cast lets reads and writes share one request.
  submit(IoOp::kWrite, file, offset, static_cast<std::byte*>(const_cast<void*>(buf)), len,
         std::move(cb), nullptr);
}

void UringEngine::sync(FileId file, IoCallback cb) {
  submit(IoOp::kSync, file, 0, nullptr, 0, std::move(cb), nullptr);
}

void UringEngine::submit(IoOp op, FileId file, uint64_t offset, std::byte* buf, size_t len,
                         IoCallback cb, IoThreadHook hook) {
  FileTable::Entry entry;
  Status st = check_request(name(), files_, op, file, offset, buf, len, options_.direct, &entry);
  if (!st.is_ok()) {
    fail_early(op, std::move(st), std::move(cb));
    return;
  }
  int buf_index = op == IoOp::kSync ? -1 : buffers_.find(buf, len);
  auto* req =
      new Request{op, file, entry, offset, buf, len, buf_index, std::move(cb), std::move(hook)};
  std::unique_lock<std::mutex> lock(mu_);
  ++outstanding_;
  ++stats_.in_flight;
  overflow_.push_back(req);
  flush_locked(lock);
}

void UringEngine::fail_early(IoOp op, Status status, IoCallback cb) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.errors;
    if (op == IoOp::kRead) ++stats_.reads;
    if (op == IoOp::kWrite) ++stats_.writes;
    if (op == IoOp::kSync) ++stats_.syncs;
  }
  executor_.post([cb = std::move(cb), status = std::move(status)] { cb(status); });
}

void UringEngine::flush_locked(std::unique_lock<std::mutex>& /*holds mu_*/) {
  // Keeping at most cq_entries_ in the kernel means the CQ can never overflow.
  while (!overflow_.empty() && in_kernel_ < cq_entries_) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) break;
    prep(sqe, overflow_.front());
    overflow_.pop_front();
    ++in_kernel_;
  }
  submit_pending_ = false;
  while (io_uring_sq_ready(&ring_) > 0) {
    int rc = submit_fn_(&ring_);
    if (rc >= 0 || rc == -EINTR) continue;
    if (rc == -EAGAIN || rc == -EBUSY) {
      // The kernel is short of memory (or CQ room) for a moment: the SQEs stay in the ring and
      // the completion thread submits them after a short wait. Waiting here would stall the
      // caller (the control loop), and the completion thread's own wait is where reaping makes
      // room.
      submit_pending_ = true;
      return;
    }
    notice_once(g_submit_notice, std::string("io_uring_submit: ") + std::strerror(-rc));
    break;
  }
}

void UringEngine::set_submit_for_testing(std::function<int(io_uring*)> submit) {
  std::lock_guard<std::mutex> lock(mu_);
  submit_fn_ = std::move(submit);
}

void UringEngine::disable_ext_arg_for_testing() {
  std::lock_guard<std::mutex> lock(mu_);
  wait_timeout_ok_ = false;
}

void UringEngine::prep(io_uring_sqe* sqe, Request* req) {
  int fd = req->entry.registered ? static_cast<int>(req->file) : req->entry.fd;
  uint64_t offset = req->offset + req->done;
  std::byte* buf = req->buf + req->done;
  auto n = static_cast<unsigned>(std::min(req->len - req->done, kMaxBytesPerSqe));
  switch (req->op) {
    case IoOp::kRead:
      if (req->buf_index >= 0) {
        io_uring_prep_read_fixed(sqe, fd, buf, n, offset, req->buf_index);
      } else {
        io_uring_prep_read(sqe, fd, buf, n, offset);
      }
      break;
    case IoOp::kWrite:
      if (req->buf_index >= 0) {
        io_uring_prep_write_fixed(sqe, fd, buf, n, offset, req->buf_index);
      } else {
        io_uring_prep_write(sqe, fd, buf, n, offset);
      }
      break;
    case IoOp::kSync:
      io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
      break;
  }
  if (req->entry.registered) sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data(sqe, req);
}

void UringEngine::completion_loop() {
  std::vector<Request*> retry, done;
  for (;;) {
    io_uring_cqe* cqe = nullptr;
    bool retry_submit;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (submit_pending_) flush_locked(lock);
      retry_submit = submit_pending_;
    }
    // A refused submit is retried every 50 us. Otherwise the wait is bounded too (100 ms), in
    // case a caller's submit was refused just after the check above with nothing in the kernel
    // to wake this thread.
    const long wait_ns = retry_submit ? 50'000 : 100'000'000;
    int rc;
    if (wait_timeout_ok_) {
      __kernel_timespec ts{0, wait_ns};
      rc = io_uring_wait_cqe_timeout(&ring_, &cqe, &ts);
      if (rc == -ETIME) continue;
    } else {
      // Without EXT_ARG, io_uring_wait_cqe_timeout would queue a timeout SQE beside callers'
      // threads filling the SQ; polling the ring's descriptor waits for a CQE without touching
      // the SQ.
      rc = io_uring_peek_cqe(&ring_, &cqe);
      if (rc == -EAGAIN) {
        pollfd pfd{ring_.ring_fd, POLLIN, 0};
        timespec ts{0, wait_ns};
        ppoll(&pfd, 1, &ts, nullptr);
        continue;
      }
    }
    if (rc < 0) {
      if (rc != -EINTR && rc != -EAGAIN) {
        notice_once(g_wait_notice, std::string("io_uring_wait_cqe: ") + std::strerror(-rc));
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      continue;
    }
    bool stop = false;
    {
      // Taking the lock before touching a request also gives TSan the happens-before edge from
      // the submitter, which it cannot see through the kernel's rings.
      std::unique_lock<std::mutex> lock(mu_);
      unsigned head = 0, seen = 0, reaped = 0;
      io_uring_for_each_cqe(&ring_, head, cqe) {
        ++seen;
        auto* req = static_cast<Request*>(io_uring_cqe_get_data(cqe));
        if (req == nullptr) {
          stop = true;
          continue;
        }
        ++reaped;
        handle_cqe(req, cqe->res, retry, done);
      }
      io_uring_cq_advance(&ring_, seen);
      in_kernel_ -= reaped;
      for (Request* req : retry) overflow_.push_back(req);
      flush_locked(lock);
    }
    retry.clear();
    for (Request* req : done) finish(req);
    done.clear();
    if (stop) return;
  }
}

void UringEngine::handle_cqe(Request* req, int res, std::vector<Request*>& retry,
                             std::vector<Request*>& done) {
  if (res < 0) {
    if ((res == -EAGAIN || res == -EINTR) && ++req->retries <= kMaxRetries) {
      retry.push_back(req);
      return;
    }
    std::string what = describe_io(name(), req->op, req->file, req->offset, req->len);
    if (req->done > 0) what += " (after " + std::to_string(req->done) + " bytes)";
    req->error = Status::from_errno(-res, what);
    done.push_back(req);
    return;
  }
  req->done += static_cast<size_t>(res);
  // 0 bytes is end of file; so is an unaligned count under O_DIRECT, whose remainder would start
  // at an unaligned offset.
  bool eof = res == 0 || (options_.direct && !is_aligned(req->done, kBlockBytes));
  if (req->op == IoOp::kSync || eof || req->done >= req->len) {
    done.push_back(req);
  } else {
    retry.push_back(req);  // short transfer: resubmit the remainder
  }
}

void UringEngine::finish(Request* req) {
  if (req->hook && req->error.is_ok()) {
    hooks_->run([this, req] { complete(req); });
  } else {
    complete(req);
  }
}

void UringEngine::complete(Request* req) {
  Result<size_t> result = req->error.is_ok() ? Result<size_t>(req->done) : req->error;
  if (result.is_ok() && req->hook) {
    Status st = req->hook(req->done);
    if (!st.is_ok()) result = std::move(st);
  }
  IoCallback cb = std::move(req->cb);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (req->op == IoOp::kRead) ++stats_.reads;
    if (req->op == IoOp::kWrite) ++stats_.writes;
    if (req->op == IoOp::kSync) ++stats_.syncs;
    if (req->buf_index >= 0) ++stats_.fixed_buffer_ios;
    --stats_.in_flight;  // before the post, so the callback sees its request counted done
    if (!result.is_ok()) {
      ++stats_.errors;
    } else if (req->op == IoOp::kRead) {
      stats_.bytes_read += req->done;
    } else if (req->op == IoOp::kWrite) {
      stats_.bytes_written += req->done;
    }
  }
  delete req;
  executor_.post([cb = std::move(cb), result = std::move(result)] { cb(result); });
  // The destructor waits on outstanding_, so it drops only once the callback is posted.
  std::lock_guard<std::mutex> lock(mu_);
  if (--outstanding_ == 0) idle_cv_.notify_all();
}

SsdEngineStats UringEngine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace tempokv
