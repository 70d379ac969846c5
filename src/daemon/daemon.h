// Daemon: tempokvd assembled from its configuration: the ServiceCore, the ZeroMQ Server in front
// of it and the /metrics HTTP endpoint, on one RealExecutor. tools/tempokvd/main.cc adds the
// command line and signals; tests start one in-process the same way.
//
// Ownership: owns the three parts; borrows the executor, which must outlive it. Threading: the
// executor's thread (create it before the loop runs).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "daemon/daemon_config.h"
#include "daemon/metrics_http.h"
#include "daemon/server.h"
#include "daemon/service_core.h"
#include "executor/real_executor.h"

namespace tempokv::service {

// server.tokens_file's "RUNTIME TOKEN" lines; refused when others than the file's owner may read
// or write it.
Result<std::map<std::string, std::string>> read_tokens_file(const std::string& path);
// The core's options for a validated configuration; `profiles_dir` resolves a profile name.
// The shared files are named after `instance` (0: one is drawn).
Result<CoreOptions> core_options(const DaemonConfig& config, const std::string& profiles_dir,
                                 uint64_t instance = 0);

// How many connections tempokvd's listener may hold under an open-files limit: the limit less the
// descriptors the daemon keeps for itself (a full store's segments, /metrics, a fixed part).
// FailedPrecondition naming server.max_sessions when fewer than it.
Result<uint64_t> connection_budget(const DaemonConfig& config, uint64_t fd_limit);

class Daemon {
 public:
  static Result<std::unique_ptr<Daemon>> start(RealExecutor& executor, const DaemonConfig& config,
                                               const std::string& profiles_dir);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Stops reading requests, ends every session (their claims cancelled), waits for reads and
  // puts in flight, closes the store; then done(status).
  void shutdown(std::function<void(Status)> done);

  const std::string& endpoint() const { return server_->endpoint(); }
  uint16_t metrics_port() const { return metrics_ ? metrics_->port() : 0; }
  ServiceCore& core() { return *core_; }
  // What the start left alone and the operator should know (entries of an earlier daemon's
  // tempokvd.shared that are not its files), one line each.
  const std::vector<std::string>& notices() const { return notices_; }
  Server& server() { return *server_; }

 private:
  Daemon() = default;
  std::unique_ptr<Server> server_;
  std::unique_ptr<ServiceCore> core_;
  std::unique_ptr<MetricsHttpServer> metrics_;
  std::string data_dir_;
  std::vector<std::string> notices_;
  int lock_fd_ = -1;  // data_dir/tempokvd.lock, held (flock) for the daemon's life
};

}  // namespace tempokv::service
