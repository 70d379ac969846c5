// The tempokvd load test: N clients, each on its own thread and session, issue a bounded random
// mix of every call for a while; then every claim is ended, and the daemon's accounting must be
// back to zero: no live claim, nothing protected, reserved or held in the write region. Each
// claim is counted by the clients (reported, completed, cancelled, failed) and compared with the
// daemon's counters, so a lost or duplicated claim (or ready notification) shows up.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tempokv/status.h"

namespace tempokv::cli {

struct LoadOptions {
  std::string endpoint;                     // a running tempokvd
  uint32_t clients = 64;
  std::chrono::milliseconds duration{30000};
  uint32_t objects = 48;                    // KV objects put before the run, shared by the claims
  uint64_t object_bytes = 256 << 10;
  uint32_t open_per_client = 4;             // requests a client keeps in flight
  uint32_t share_every = 4;                 // every k-th pair of clients is two ranks of one runtime
  uint64_t seed = 1;
  // Longest wait for one reply: generous, a load test measures latency rather than giving up
  // (sanitizer builds on two cores answer puts in seconds).
  std::chrono::milliseconds call_timeout{60000};
};

struct LoadReport {
  uint64_t calls = 0;
  uint64_t call_errors = 0;      // errors the mix did not expect (a real problem)
  uint64_t refused = 0;          // expected refusals (ResourceExhausted on a full write region)
  uint64_t reported = 0;         // claims reported by the clients
  uint64_t completed = 0;        // ended by end_transfer
  uint64_t cancelled = 0;
  uint64_t failed = 0;           // told by a ready error
  uint64_t notifications = 0;
  uint64_t duplicate_notifications = 0;
  uint64_t puts = 0;
  double seconds = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;  // client-side call latency (round trip)
  double daemon_p50_ms = 0, daemon_p99_ms = 0;  // the daemon's receipt-to-reply latency
  // The daemon's view after the run.
  double daemon_reported = 0, live_claims = 0, protected_bytes = 0, reserved_bytes = 0,
         write_used_bytes = 0;
  std::vector<std::string> problems;  // empty when every check held
};

Result<LoadReport> run_service_load(const LoadOptions& options);
std::string format_load_report(const LoadReport& report);

}  // namespace tempokv::cli
