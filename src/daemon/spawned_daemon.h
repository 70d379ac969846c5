// SpawnedDaemon: a tempokvd child process, for the tools and tests that need a real daemon (the
// evaluation's service mode, the daemon's own tests). It is started on a data directory with an
// ipc endpoint there and no metrics server, is ready once its socket exists, and is stopped with
// SIGTERM (a clean shutdown exits 0). A daemon still running when its SpawnedDaemon is destroyed
// is killed (SIGKILL), so a failed test or run never leaves one behind, nor its shared files (nor
// does one that a signal ended on its own, found when it is reaped).
//
// Ownership: owns the child process (not its data directory). Threading: not thread-safe; start,
// stop and destruction from one thread. Spawning uses posix_spawn, safe in a threaded process.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "tempokv/executor.h"
#include "tempokv/status.h"

namespace tempokv::service {

struct SpawnOptions {
  std::string binary;                   // the tempokvd executable
  std::string data_dir;                 // --data-dir (the daemon creates it); the socket lives here
  // "" serves ipc://DATA_DIR/tempokvd.sock; "tcp://127.0.0.1:PORT" serves tcp (ready once a
  // connection to the port succeeds).
  std::string tcp_endpoint;
  std::vector<std::string> extra_args;  // more flags, e.g. "--set", "tier.slot_bytes=1MiB"
  std::string log_path;                 // the child's stderr goes here (appended); "": inherited
  std::string metrics_address;          // --metrics: "" serves no /metrics
  Duration ready_timeout = std::chrono::seconds(20);  // longest wait for the socket
  // The child's limits, set in a shell before it execs the daemon (tests of what a daemon does
  // under them): RLIMIT_NOFILE soft and hard (0: inherited), and its umask (-1: inherited).
  uint64_t max_open_files = 0;
  int umask = -1;
  Status validate() const;
};

class SpawnedDaemon {
 public:
  // Spawns the daemon and waits until its socket exists. FailedPrecondition with the exit status
  // when the daemon exits first (bad configuration: its stderr says why); Unavailable when the
  // socket does not appear within ready_timeout (the child is killed).
  static Result<std::unique_ptr<SpawnedDaemon>> start(const SpawnOptions& options);
  ~SpawnedDaemon();
  SpawnedDaemon(const SpawnedDaemon&) = delete;
  SpawnedDaemon& operator=(const SpawnedDaemon&) = delete;

  // ipc://DATA_DIR/tempokvd.sock
  const std::string& endpoint() const { return endpoint_; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }

  // SIGTERM, then waits up to `timeout` for the exit: the exit status (0 after a clean shutdown;
  // 128 + N when signal N ended it). Unavailable when it did not exit in time and was killed;
  // FailedPrecondition when it was already stopped.
  Result<int> stop(Duration timeout = std::chrono::seconds(20));

 private:
  SpawnedDaemon(pid_t pid, std::string endpoint) : pid_(pid), endpoint_(std::move(endpoint)) {}
  // Reaps the child if it has exited: its status as stop() reports it.
  Result<int> try_reap();
  // SIGKILLs and reaps the child, then clean().
  void kill_and_clean();
  // Removes the shared files the dead child recorded in its data directory (shared_file.h) when
  // no other daemon holds that directory's lock (reaping a child a signal ended does too).
  void clean();

  pid_t pid_ = -1;
  std::string endpoint_;
  std::string data_dir_;
};

}  // namespace tempokv::service
