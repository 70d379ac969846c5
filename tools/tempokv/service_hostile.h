// The tempokvd hostile test (`tempokv service-load --hostile`): it starts a daemon itself under a
// low open-files limit, connects well-behaved clients (each its own session, putting objects and
// staging claims of them), and then, while they run, every attack a hostile or careless peer
// can make at once (service_attacks.h): idle connections beyond what the descriptors allow,
// refused hellos, sessions cycled to escape quotas, manifests of one key repeated and of the
// most distinct keys, floods, garbage, a runtime crowded with sessions, write reservations never
// put. At the end it checks that the daemon is alive and answers, that every call of the good
// clients succeeded, that each attack was refused where it should be, and how much anonymous
// memory the daemon grew by.
//
// Threads: one per good client and one per attack; the daemon is a child process (posix_spawn).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tempokv/status.h"

namespace tempokv::cli {

struct HostileOptions {
  std::string tempokvd;  // the daemon's binary
  std::string data_dir;  // its data directory (created; kept afterwards)
  uint32_t good_clients = 4;
  std::chrono::milliseconds duration{10000};  // how long the attacks run
  uint64_t seed = 1;
  uint64_t max_open_files = 512;  // the daemon's RLIMIT_NOFILE (soft and hard)
  // The daemon's anonymous memory may grow by at most this much (a problem beyond).
  uint64_t max_rss_growth_bytes = 64ULL << 20;
  std::vector<std::string> daemon_args;  // more `--set` flags for the daemon
};

struct HostileReport {
  bool daemon_alive = false;      // running at the end, answering, and stopped cleanly
  double good_client_p99_ms = 0;  // the good clients' calls while attacked (round trip)
  double good_client_max_ms = 0;
  uint64_t good_calls = 0;
  uint64_t good_failures = 0;    // calls of the good clients that failed (each a problem)
  int64_t rss_growth_bytes = 0;  // the daemon's RssAnon at the end less before the attacks
  uint64_t rss_start_bytes = 0;
  std::map<std::string, uint64_t> attacks;  // actions made, per kind of attack
  std::map<std::string, double> defences;   // the daemon's counters of what it refused
  double seconds = 0;
  std::vector<std::string> problems;  // empty when every check held
};

Result<HostileReport> run_service_hostile(const HostileOptions& options);
std::string format_hostile_report(const HostileReport& report);
// The JSON object of the report (the fields the issue lists, plus the details and problems).
std::string hostile_report_json(const HostileReport& report);

}  // namespace tempokv::cli
