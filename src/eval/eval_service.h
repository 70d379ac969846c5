// EvalService: the tempokvd of `tempokv eval --via-service` (docs/evaluation.md, "Through the
// service"). Every run gets a fresh daemon, configured as EvalStack::create configures the
// in-process stack (slot = one chunk, tier and budget in whole slots, the store's geometry, the
// policy, tick, reads in flight, TTR prior, cost profile, slot limit and output prior; io_uring
// store). Fresh, because the in-process stack's fast tier is new for every run, and a daemon kept
// from the run before would serve this one from the KV its tier still holds. The data directory
// and so the store outlive the daemons: the precomputed KV is written once per scenario.
//
// A control client (its own session, attached to the storage's executor for heartbeats) puts the
// precomputed KV and reads the daemon's counters; the engines have clients of their own
// (EvalStack).
//
// Ownership: owns the daemon process and the control client; borrows the executor given to
// start(), which must outlive the daemon's run (stop() or the destructor ends it). The data
// directory is left in place (Runner removes it). Threading: the executor's loop thread, which
// is the thread that drives it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/spawned_daemon.h"
#include "eval/stack.h"
#include "tempokv/client.h"
#include "tempokv/protocol.h"

namespace tempokv {

// The controller's and the tier's numbers a run's row is made of: the daemon's stats (named
// below) in service mode, the in-process controller and tier otherwise.
struct ControlCounters {
  double protected_gib_s = 0;     // protected_gib_seconds_total
  uint64_t claims = 0;            // claims_reported_total
  uint64_t commits = 0;           // commits_total
  uint64_t refused_claims = 0;    // claims_refused_total
  uint64_t refused_attempts = 0;  // commits_refused_total
  uint64_t tier_bytes = 0;        // tier_capacity_bytes
  uint64_t budget_bytes = 0;      // tier_budget_bytes
  uint64_t held_bytes = 0;        // tier_protected_bytes + tier_reserved_bytes
  uint64_t reads = 0;             // reads_in_flight + reads_queued
  bool drained() const { return held_bytes == 0 && reads == 0; }
};
// Reads them from a stats reply; InvalidArgument naming the first one missing.
Result<ControlCounters> service_counters(const service::StatList& stats);

// tempokvd's flags (after --data-dir, --endpoint and --metrics) for a run of `stack` on a storage
// of `storage`'s geometry, the cost profile read from profile_path. InvalidArgument for a stack
// the daemon cannot reproduce (lmcache-dax, a tick not in whole ms, a fixed TTR rate other than
// the TTR prior).
Result<std::vector<std::string>> daemon_args(const StorageConfig& storage, const StackConfig& stack,
                                             const std::string& profile_path);

class EvalService {
 public:
  EvalService(std::string binary, std::string data_dir)
      : binary_(std::move(binary)), data_dir_(std::move(data_dir)) {}
  ~EvalService();
  EvalService(const EvalService&) = delete;
  EvalService& operator=(const EvalService&) = delete;

  // Stops the daemon of the previous run (if any), writes the stack's profile, starts a new
  // daemon for `stack` and connects the control client, attached to `executor`.
  Status start(const StorageConfig& storage, const StackConfig& stack, RealExecutor& executor);
  // Puts, with the content fill_chunk_bytes gives (as the in-process precompute), the requests'
  // precomputed chunks that the daemon's lookup reports missing.
  Status precompute(const std::vector<Request>& requests);
  Result<ControlCounters> counters();
  // The daemon's whole stats list (the fleet scenario reads its remote_* counters).
  Result<service::StatList> stats();
  // Flags added after daemon_args() at the next start() (the fleet's --set remote.seeds=...).
  void set_extra_args(std::vector<std::string> args) { extra_args_ = std::move(args); }
  // Ends the control session, SIGTERMs the daemon and waits: Internal unless it exited 0. OK
  // when no daemon runs.
  Status stop();

  bool running() const { return daemon_ != nullptr; }
  const std::string& endpoint() const { return daemon_->endpoint(); }  // while running
  const std::string& data_dir() const { return data_dir_; }

 private:
  std::string binary_;
  std::string data_dir_;
  std::vector<std::string> extra_args_;
  std::unique_ptr<service::SpawnedDaemon> daemon_;
  std::unique_ptr<ServiceClient> control_;
};

}  // namespace tempokv
