// SsdEngine: the seam for all SSD I/O. Asynchronous reads, writes and syncs of extents of files
// the caller opened; every completion callback is post()ed to the Executor given at construction,
// so control-plane code sees completions on its own thread.
//
// Implementations (factory below): io_uring with O_DIRECT, a pread/pwrite thread pool (buffered or
// O_DIRECT), a simulated engine that moves no bytes and only takes time, and a fault-injecting
// wrapper around any of them.
//
// Contract:
// * Direct engines (direct() true) require offset, length and buffer address to be multiples of
//   kBlockBytes (4 KiB); a violation completes with InvalidArgument naming the value.
// * A callback receives the bytes transferred. Real engines retry short transfers internally, so a
//   result smaller than the length asked for means end of file (or an injected fault); callers
//   treat it as an error for the extent.
// * `on_io_thread` (optional) runs on one of the engine's threads (never the Executor's), after
//   the transfer completed and before the callback is posted, with the bytes transferred; use it
//   for per-byte work (checksums) that must not run on the control plane. A non-OK Status it
//   returns replaces the result. Hooks of different requests may run at the same time on
//   different threads (io_uring: options.hook_threads), so a hook touches only its own request's
//   bytes or thread-safe state.
// * Callbacks of different requests are posted in no particular order (a hooked read may be
//   posted after a request that completed later).
// * read/write/sync and add_file/remove_file are thread-safe. remove_file requires that no I/O on
//   that file is in flight. The engine must outlive every callback it will post; destroying it
//   waits for in-flight I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "tempokv/executor.h"
#include "tempokv/status.h"

namespace tempokv {

using FileId = uint32_t;
using IoCallback = std::function<void(Result<size_t>)>;
using IoThreadHook = std::function<Status(size_t bytes)>;

struct SsdEngineStats {
  uint64_t reads = 0;
  uint64_t writes = 0;
  uint64_t syncs = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t errors = 0;
  uint64_t in_flight = 0;         // requests submitted and not yet completed
  uint64_t fixed_buffer_ios = 0;  // io_uring only: requests that used registered buffers
  // Simulated engine only: total time with at least one request in service (holding one of the
  // sim_max_concurrency slots), so a staging provider can calibrate bytes / busy time.
  uint64_t busy_ns = 0;
};

class SsdEngine {
 public:
  virtual ~SsdEngine() = default;

  virtual std::string_view name() const = 0;
  // True when transfers must be 4 KiB-aligned (O_DIRECT).
  virtual bool direct() const = 0;
  // Adopts an open file descriptor (not owned; the caller closes it after remove_file). The
  // simulated engine takes fd -1.
  virtual Result<FileId> add_file(int fd) = 0;
  virtual void remove_file(FileId file) = 0;
  // Declares a buffer that many transfers will use, so an engine may register it with the kernel
  // (io_uring fixed buffers). Always safe to skip; returns OK when the engine keeps it
  // unregistered.
  virtual Status register_buffer(void* base, size_t bytes) = 0;
  virtual void unregister_buffer(void* base) = 0;

  virtual void read(FileId file, uint64_t offset, void* buf, size_t len, IoCallback cb,
                    IoThreadHook on_io_thread = nullptr) = 0;
  virtual void write(FileId file, uint64_t offset, const void* buf, size_t len, IoCallback cb) = 0;
  // fdatasync of the file; completes with 0 bytes.
  virtual void sync(FileId file, IoCallback cb) = 0;

  virtual SsdEngineStats stats() const = 0;
};

enum class SsdEngineKind { kUring, kThreadPool, kSimulated };

struct SsdEngineOptions {
  SsdEngineKind kind = SsdEngineKind::kUring;
  bool direct = true;            // O_DIRECT alignment rules (thread pool may run buffered)
  uint32_t queue_depth = 256;    // io_uring submission queue entries
  uint32_t threads = 4;          // thread pool workers
  // io_uring: threads that run IoThreadHooks (checksums) of completed reads, so that hashing one
  // object never delays reaping and resubmitting the others; 0 runs them on the completion thread.
  uint32_t hook_threads = 2;
  bool register_buffers = true;  // io_uring: use fixed buffers where memlock allows
  // Simulated engine: each request takes latency, then moves its bytes sharing an aggregate
  // bandwidth with the others in service; at most max_concurrency are in service at once.
  Duration sim_latency = std::chrono::microseconds(80);
  double sim_read_bytes_per_s = 11.0 * 1024 * 1024 * 1024;
  double sim_write_bytes_per_s = 6.0 * 1024 * 1024 * 1024;
  uint32_t sim_max_concurrency = 16;

  Status validate() const;
};

// Makes the engine of options.kind. io_uring that the kernel refuses falls back to the thread pool
// and says so once on stderr.
Result<std::unique_ptr<SsdEngine>> make_ssd_engine(Executor& executor,
                                                   const SsdEngineOptions& options);
// "uring", "threadpool" or "sim"; the error names the text and the accepted names.
Result<SsdEngineKind> parse_ssd_engine_kind(std::string_view name);
std::string_view ssd_engine_kind_name(SsdEngineKind kind);

}  // namespace tempokv
