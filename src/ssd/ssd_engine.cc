// The factory, option checks and kind names of the SSD engine seam.
#include "ssd/ssd_engine.h"

#include <cmath>
#include <mutex>

#include "ssd/io_args.h"
#include "ssd/sim_ssd_engine.h"
#include "ssd/thread_pool_engine.h"
#include "ssd/uring_engine.h"

namespace tempokv {
namespace {

std::once_flag g_fallback_notice;

Status out_of_range(const char* field, const std::string& rule, const std::string& got) {
  return Status::invalid_argument("SsdEngineOptions." + std::string(field) + " must be " + rule +
                                  " (got " + got + ")");
}

Status check_rate(const char* field, double v) {
  if (std::isfinite(v) && v > 0) return Status::ok();
  return out_of_range(field, "a positive, finite number of bytes per second", std::to_string(v));
}

}  // namespace

Status SsdEngineOptions::validate() const {
  if (queue_depth < 1 || queue_depth > 32768) {
    return out_of_range("queue_depth", "in [1, 32768]", std::to_string(queue_depth));
  }
  if (threads < 1 || threads > 1024) {
    return out_of_range("threads", "in [1, 1024]", std::to_string(threads));
  }
  if (hook_threads > 64) {
    return out_of_range("hook_threads", "in [0, 64]", std::to_string(hook_threads));
  }
  if (sim_latency < Duration::zero()) {
    return out_of_range("sim_latency", "zero or positive",
                        std::to_string(sim_latency.count()) + " ns");
  }
  TEMPOKV_RETURN_IF_ERROR(check_rate("sim_read_bytes_per_s", sim_read_bytes_per_s));
  TEMPOKV_RETURN_IF_ERROR(check_rate("sim_write_bytes_per_s", sim_write_bytes_per_s));
  if (sim_max_concurrency < 1) {
    return out_of_range("sim_max_concurrency", "at least 1", std::to_string(sim_max_concurrency));
  }
  return Status::ok();
}

Result<std::unique_ptr<SsdEngine>> make_ssd_engine(Executor& executor,
                                                   const SsdEngineOptions& options) {
  TEMPOKV_RETURN_IF_ERROR(options.validate());
  switch (options.kind) {
    case SsdEngineKind::kUring: {
      auto uring = UringEngine::create(executor, options);
      if (uring.is_ok()) return std::unique_ptr<SsdEngine>(std::move(uring).value());
      if (uring.status().code() != StatusCode::kUnavailable) return uring.status();
      notice_once(g_fallback_notice, "io_uring is not usable here (" + uring.status().message() +
                                         "); using the pread/pwrite thread pool engine");
      [[fallthrough]];
    }
    case SsdEngineKind::kThreadPool: {
      TEMPOKV_ASSIGN_OR_RETURN(auto pool, ThreadPoolEngine::create(executor, options));
      return std::unique_ptr<SsdEngine>(std::move(pool));
    }
    case SsdEngineKind::kSimulated:
      return std::unique_ptr<SsdEngine>(std::make_unique<SimSsdEngine>(executor, options));
  }
  return Status::invalid_argument("SsdEngineOptions.kind: unknown engine kind " +
                                  std::to_string(static_cast<int>(options.kind)));
}

Result<SsdEngineKind> parse_ssd_engine_kind(std::string_view name) {
  if (name == "uring") return SsdEngineKind::kUring;
  if (name == "threadpool") return SsdEngineKind::kThreadPool;
  if (name == "sim") return SsdEngineKind::kSimulated;
  return Status::invalid_argument("unknown SSD engine '" + std::string(name) +
                                  "' (expected uring, threadpool or sim)");
}

std::string_view ssd_engine_kind_name(SsdEngineKind kind) {
  switch (kind) {
    case SsdEngineKind::kUring:
      return "uring";
    case SsdEngineKind::kThreadPool:
      return "threadpool";
    case SsdEngineKind::kSimulated:
      return "sim";
  }
  return "unknown";
}

}  // namespace tempokv
