// The tempokvd chaos test (`tempokv service-load --chaos`): it starts a daemon itself, runs N
// client processes (forked) that put KV and stage claims of what they put, SIGKILLs a share of
// them mid-put or mid-transfer (replacing each), SIGKILLs the daemon once and starts it again on
// the same data directory, and at the end checks that every acknowledged put is readable and
// intact (read back through claims), that every claim a client saw ready had the bytes it put,
// and that the daemon's live claims, protected, reserved and write-region bytes are all 0.
//
// The parent has no threads while it forks (it holds no client until the clients are done), so
// the children may use ZeroMQ freely. Children report on a pipe, one line per event.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tempokv/status.h"

namespace tempokv::cli {

struct ChaosOptions {
  std::string tempokvd;  // the daemon's binary
  std::string data_dir;  // its data directory (created; kept afterwards)
  uint32_t clients = 8;
  std::chrono::milliseconds duration{10000};
  uint64_t seed = 1;
  uint64_t object_bytes = 64 << 10;  // each put: this plus 0..3 pages
  std::vector<std::string> daemon_args;  // more `--set` flags for the daemon
};

struct ChaosReport {
  uint64_t acked_puts = 0;
  uint64_t acked_puts_intact = 0;
  uint64_t claims_verified = 0;  // claims whose bytes a client compared after `ready`
  uint64_t mismatches = 0;       // ... and found different from what was put
  uint64_t client_errors = 0;    // calls that failed (expected around the daemon's restart)
  double live_claims_after = 0, protected_bytes_after = 0, reserved_bytes_after = 0,
         write_region_bytes_after = 0;
  uint32_t daemon_restarts = 0;
  uint32_t clients_killed = 0;
  uint32_t killed_mid_put = 0, killed_mid_transfer = 0;
  double seconds = 0;
  std::vector<std::string> problems;  // empty when every check held
};

Result<ChaosReport> run_service_chaos(const ChaosOptions& options);
std::string format_chaos_report(const ChaosReport& report);
// The JSON object of the report (the fields the issue lists, plus the problems).
std::string chaos_report_json(const ChaosReport& report);

}  // namespace tempokv::cli
