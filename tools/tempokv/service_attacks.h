// The attacks of `tempokv service-load --hostile` (service_hostile.h), each a loop that runs on a
// thread of its own until the deadline and says how many actions it made and what the daemon did
// that it should not have (an attack that got through is a problem). Raw peers speak the
// protocol through a bare ZeroMQ DEALER (what no client library would send); the others use
// ServiceClient as a careless runtime would.
//
// Threading: each function runs on its caller's thread and shares nothing with the others.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tempokv::cli {

// What the attacks know of the daemon they attack (its configuration, as the run set it).
struct AttackTarget {
  std::string endpoint;  // ipc://PATH
  std::chrono::steady_clock::time_point deadline;
  uint32_t connection_budget = 0;  // connections its descriptors allow
  std::chrono::milliseconds hello_timeout{1000};
  std::string guarded_runtime;  // a runtime of the tokens file
  uint32_t max_sessions_per_runtime = 0;
  uint32_t max_requests_per_runtime = 0;
  uint32_t max_manifest_entries = 0;
  uint64_t max_manifest_entries_per_runtime = 0;
  uint64_t max_object_bytes = 0;
  uint64_t seed = 1;
};

struct AttackResult {
  std::string kind;
  uint64_t actions = 0;
  std::vector<std::string> problems;
};

// service_attacks_raw.cc
// Bursts of plain connections that never say a word, more than the descriptors allow, held
// past the hello timeout (the daemon must close them).
AttackResult idle_connections(const AttackTarget& t);
// Hellos without a common version, and to the guarded runtime without its token.
AttackResult refused_hellos(const AttackTarget& t);
// A session sending heavy lookups without reading a reply, then leaving its backlog behind.
AttackResult flood(const AttackTarget& t);
// Malformed, truncated, oversized and multi-frame messages.
AttackResult garbage(const AttackTarget& t);
// Sessions reserving write-region bytes they never put, beyond their quota.
AttackResult write_hoarding(const AttackTarget& t);
// Steps whose edits (protocol v4) name a base never sent, decoders that are none, more taken
// than waiting, or grow the order past its limit: each must be refused.
AttackResult step_edits(const AttackTarget& t);

// service_attacks_client.cc
// Sessions of one runtime, one after another, each adding requests and leaving them behind.
AttackResult session_cycling(const AttackTarget& t);
// report_hit manifests of the most copies of one key.
AttackResult duplicate_manifests(const AttackTarget& t);
// report_hit manifests of the most distinct keys, claim after claim.
AttackResult large_manifests(const AttackTarget& t);
// More sessions joining one runtime than it may have.
AttackResult crowded_runtime(const AttackTarget& t);

}  // namespace tempokv::cli
