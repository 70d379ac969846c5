// The fleet scenario (docs/fleet.md): a conversation workload routed round-robin over N engines
// that share a remote KV tier. Real mode (scenario_fleet_real.cc): one tempokvd per engine on a
// local Redis Cluster. Simulated (scenario_fleet_sim.cc): N in-process stacks on one virtual
// clock and a modelled cluster and network (sim_remote.h). Internal to the eval library.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "eval/runner.h"
#include "workload/request.h"

namespace tempokv {

struct FleetWorkload {
  std::vector<Request> requests;  // arrival order; request i goes to engine i mod engines
  uint32_t engines = 2;
  bool from_trace = false;
  double span_s = 0;                   // first to last arrival
  double rate = 0;                     // requests per second over the span
  double kill_at_s = 0;                // killed-master variant: when the master dies
  uint64_t largest_request_bytes = 0;  // KV of the largest prompt's chunks
  uint64_t prompt_chunks = 0;          // Σ chunks of every prompt (the hit rates' denominator)
  uint32_t prior_output_tokens = 128;
};

// The trace's window when the file is there (noted; skipped with a message otherwise and the
// synthetic conversations used), the engine count (--engines; default 2 real, 16 sim).
Result<FleetWorkload> fleet_workload(Runner& runner, const CostProfile& profile);
std::vector<std::string> fleet_policies();  // tempokv, immediate, demand, queue-4

// hit_local, hit_remote, miss (fractions of every prompt chunk) and remote_chunks: a request's
// hit chunks count when it was served from them (staged or ordinary), `remote_objects` of them
// came from the cluster.
std::vector<std::pair<std::string, double>> fleet_hit_fields(
    const std::vector<RequestRecord>& records, const FleetWorkload& work, double remote_objects);

// One run's row and records, appended to the result (the records feed the CSV).
struct FleetOutcome {
  EvalRow row;
  TimePoint start{};
  std::vector<RequestRecord> records;
};
void add_fleet_outcome(EvalResult& result, FleetOutcome outcome);

// The order real mode runs `policies` policies in for `seed`: rotated so seed s starts at the
// s-th (mod the count), so over consecutive seeds each runs at every place in turn.
std::vector<size_t> fleet_run_order(size_t policies, uint64_t seed);

Status run_fleet_real(Runner& runner, EvalResult& result);
Status run_fleet_sim(Runner& runner, EvalResult& result);

}  // namespace tempokv
