// A real tempokvd process for tests: started from the build's binary on a fresh data directory
// with a small tier and write region, stopped with SIGTERM (its exit status checked).
#pragma once

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "daemon/spawned_daemon.h"
#include "tempokv/client.h"

namespace tempokv::testing {

// The spawning itself is service::SpawnedDaemon's; this adds the tests' small configuration.
class DaemonProcess {
 public:
  // `extra` are more `--set table.key=value` arguments (or any flags).
  explicit DaemonProcess(std::string data_dir, std::vector<std::string> extra = {})
      : dir_(std::move(data_dir)), extra_(std::move(extra)) {}

  std::string endpoint() const {
    return tcp_.empty() ? "ipc://" + dir_ + "/tempokvd.sock" : tcp_;
  }
  // Append the daemon's stderr to `path` instead of the test's (call before start()).
  void log_to(std::string path) { log_ = std::move(path); }
  // Serve /metrics on `address` (HOST:PORT; call before start()).
  void serve_metrics(std::string address) { metrics_ = std::move(address); }
  // Serve tcp://127.0.0.1:PORT instead of the ipc socket (call before start()).
  void use_tcp(uint16_t port) { tcp_ = "tcp://127.0.0.1:" + std::to_string(port); }
  // Start it under this umask, or with at most this many open files (soft and hard limit; call
  // before start()).
  void set_umask(int mask) { umask_ = mask; }
  void limit_open_files(uint64_t n) { max_open_files_ = n; }
  pid_t pid() const { return daemon_ ? daemon_->pid() : -1; }

  // Starts the daemon and waits until its socket exists.
  bool start() {
    service::SpawnOptions o;
    o.binary = TEMPOKVD_PATH;
    o.data_dir = dir_;
    o.tcp_endpoint = tcp_;
    o.extra_args = {
        "--set", "tier.capacity_bytes=64MiB", "--set", "tier.budget_bytes=32MiB",
        "--set", "writes.region_bytes=64MiB", "--set", "store.segment_bytes=64MiB",
        "--set", "store.capacity_bytes=1GiB", "--set", "store.max_object_bytes=16MiB",
        "--set", "store.engine=threads",      "--set", "server.heartbeat_timeout_ms=4000"};
    o.extra_args.insert(o.extra_args.end(), extra_.begin(), extra_.end());
    o.ready_timeout = std::chrono::seconds(30);  // a loaded two-core suite run
    o.log_path = log_;
    o.metrics_address = metrics_;
    o.umask = umask_;
    o.max_open_files = max_open_files_;
    auto d = service::SpawnedDaemon::start(o);
    if (!d.is_ok()) {
      std::cerr << "tempokvd did not start: " << d.status().to_string() << "\n";
      return false;
    }
    daemon_ = std::move(d).value();
    // Its socket exists before it logs what it did at start (the notices, then "serving on"):
    // with a log, wait for that line, so a test reading the log right after start() sees them.
    for (int i = 0; !log_.empty() && i < 3000; ++i) {
      std::ifstream in(log_);
      const std::string text((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      if (text.find("tempokvd: serving on") != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

  // SIGTERM and wait: the exit status (0 after a clean shutdown), -1 when it had to be killed.
  int stop() {
    if (!daemon_) return -1;
    Result<int> code = daemon_->stop();
    return code.is_ok() ? *code : -1;
  }

  Result<std::unique_ptr<ServiceClient>> connect(std::string runtime = "",
                                                 std::string name = "test",
                                                 uint32_t token_budget = 0,
                                                 bool async_loads = false,
                                                 bool step_edits = true) const {
    ClientOptions o;
    o.step_edits = step_edits;
    o.token_budget = token_budget;
    o.async_loads = async_loads;
    o.endpoint = endpoint();
    o.name = std::move(name);
    o.runtime = std::move(runtime);
    o.call_timeout = std::chrono::seconds(5);
    return ServiceClient::connect(o);
  }

 private:
  std::string dir_;
  std::vector<std::string> extra_;
  std::string tcp_;
  std::string log_;
  std::string metrics_;
  int umask_ = -1;
  uint64_t max_open_files_ = 0;
  std::unique_ptr<service::SpawnedDaemon> daemon_;  // killed with it if still running
};

// A named counter of a stats reply (NaN when absent).
inline double stat(const service::StatList& stats, const std::string& name) {
  for (const auto& [n, v] : stats)
    if (n == name) return v;
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace tempokv::testing
