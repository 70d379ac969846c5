// A real tempokvd process for tests: started from the build's binary on a fresh data directory
// with a small tier and write region, stopped with SIGTERM (its exit status checked).
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tempokv/client.h"

extern char** environ;

namespace tempokv::testing {

class DaemonProcess {
 public:
  // `extra` are more `--set table.key=value` arguments (or any flags).
  explicit DaemonProcess(std::string data_dir, std::vector<std::string> extra = {})
      : dir_(std::move(data_dir)), extra_(std::move(extra)) {}
  ~DaemonProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  std::string endpoint() const { return "ipc://" + dir_ + "/tempokvd.sock"; }
  pid_t pid() const { return pid_; }

  // Starts the daemon and waits until its socket exists.
  bool start() {
    std::filesystem::create_directories(dir_);
    std::filesystem::remove(dir_ + "/tempokvd.sock");
    std::vector<std::string> args = {TEMPOKVD_PATH,
                                     "--data-dir", dir_,
                                     "--metrics", "",
                                     "--set", "tier.capacity_bytes=64MiB",
                                     "--set", "tier.budget_bytes=32MiB",
                                     "--set", "writes.region_bytes=64MiB",
                                     "--set", "store.segment_bytes=64MiB",
                                     "--set", "store.capacity_bytes=1GiB",
                                     "--set", "store.max_object_bytes=16MiB",
                                     "--set", "store.engine=threads",
                                     "--set", "server.heartbeat_timeout_ms=1500"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return false;
    for (int i = 0; i < 500; ++i) {
      if (std::filesystem::exists(dir_ + "/tempokvd.sock")) return true;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // SIGTERM and wait: the exit status (0 after a clean shutdown), -1 when it had to be killed.
  int stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 1000; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

  Result<std::unique_ptr<ServiceClient>> connect(std::string runtime = "",
                                                 std::string name = "test") const {
    ClientOptions o;
    o.endpoint = endpoint();
    o.name = std::move(name);
    o.runtime = std::move(runtime);
    o.call_timeout = std::chrono::seconds(5);
    return ServiceClient::connect(o);
  }

 private:
  std::string dir_;
  std::vector<std::string> extra_;
  pid_t pid_ = -1;
};

// A named counter of a stats reply (NaN when absent).
inline double stat(const service::StatList& stats, const std::string& name) {
  for (const auto& [n, v] : stats)
    if (n == name) return v;
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace tempokv::testing
