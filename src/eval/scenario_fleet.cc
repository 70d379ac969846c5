#include "eval/scenario_fleet.h"

#include <algorithm>
#include <filesystem>

#include "eval/fleet_workload.h"
#include "eval/scenarios.h"
#include "workload/mooncake_trace.h"

namespace tempokv {

Status run_fleet(Runner& runner, EvalResult& result) {
  return runner.sim() ? run_fleet_sim(runner, result) : run_fleet_real(runner, result);
}

std::vector<std::string> fleet_policies() { return {"tempokv", "immediate", "demand", "queue-4"}; }

Result<FleetWorkload> fleet_workload(Runner& runner, const CostProfile& profile) {
  const EvalOptions& o = runner.options();
  FleetWorkload w;
  w.engines = o.engines ? o.engines : (runner.sim() ? 16 : 2);
  if (w.engines < 2) return Status::invalid_argument("--scenario fleet needs --engines >= 2");
  std::vector<TraceRecord> records;
  SyntheticConversations s;  // when there is no trace
  const bool no_trace = o.trace_path.empty() || o.trace_path == "none";
  if (!no_trace && std::filesystem::exists(o.trace_path)) {
    TEMPOKV_ASSIGN_OR_RETURN(auto all, load_trace(o.trace_path));
    const double window = o.window_s.value_or(runner.sim() ? 600 : 30);
    const uint32_t limit = o.max_requests ? o.max_requests : (runner.sim() ? 0 : 80);
    records = trace_window(all, o.window_start_s, window, limit);
    w.from_trace = true;
    runner.note("fleet: the trace " + o.trace_path + ", " +
                std::to_string(records.size()) + " requests from " +
                std::to_string(o.window_start_s) + " s");
  } else {
    s.seed = o.seed;
    s.conversations = 6 * w.engines;  // real mode: 6 per engine, one begun every 0.4 s
    if (runner.sim()) {
      // Paper scale, the H100 profiles: 8 conversations per engine, all begun within the first
      // 20 s, a turn every 20 s (about 0.4 requests/s per engine).
      s.conversations = 8 * w.engines;
      s.turns = 6;
      s.min_new_tokens = 2048;
      s.max_new_tokens = 8192;
      s.min_output = 64;
      s.max_output = 512;
      s.start_gap_s = 20.0 / s.conversations;
      s.turn_gap_s = 20;
    }
    records = synthetic_conversations(s);
    if (o.max_requests && records.size() > o.max_requests) records.resize(o.max_requests);
    runner.note("fleet: " +
                (no_trace ? std::string("no trace (--trace none)") : o.trace_path + " is absent") +
                "; a synthetic conversation workload instead (" + std::to_string(records.size()) +
                " requests, " + std::to_string(s.conversations) + " conversations of " +
                std::to_string(s.turns) + " turns)");
  }
  if (records.empty()) return Status::invalid_argument("fleet: the workload holds no request");
  TraceReplayOptions ro;
  ro.model = profile.model;
  ro.kv_bytes_per_token = profile.kv_bytes_per_token;
  ro.time_scale = o.time_scale;
  ro.token_seed = o.seed;
  // Records are re-based on their own first arrival (trace_window kept the window's records).
  const double t0 = records.front().timestamp_ms;
  for (TraceRecord& r : records) r.timestamp_ms -= t0;
  TEMPOKV_ASSIGN_OR_RETURN(w.requests, make_trace_requests(records, ro));
  w.span_s = to_seconds(w.requests.back().arrival - w.requests.front().arrival);
  w.rate = double(w.requests.size()) / std::max(w.span_s, 1e-9);
  if (!w.from_trace) {
    // The offered rate by construction, the same for every seed (so --seeds folds the rows).
    w.rate = double(s.conversations) * s.turns /
             (s.conversations * s.start_gap_s + s.turns * s.turn_gap_s) / o.time_scale;
  }
  w.kill_at_s = 0.4 * w.span_s;
  for (const Request& r : w.requests) {
    w.largest_request_bytes = std::max(w.largest_request_bytes, r.chunk_bytes(r.chunks.size()));
    w.prompt_chunks += r.chunks.size();
  }
  w.prior_output_tokens = w.from_trace ? 512 : 128;
  return w;
}

std::vector<size_t> fleet_run_order(size_t policies, uint64_t seed) {
  std::vector<size_t> order;
  for (size_t j = 0; j < policies; ++j) {
    order.push_back(size_t((seed + policies - 1 + j) % policies));
  }
  return order;
}

void add_fleet_outcome(EvalResult& result, FleetOutcome outcome) {
  result.rows.push_back(std::move(outcome.row));
  result.runs.push_back({result.rows.size() - 1, outcome.start, std::move(outcome.records)});
}

std::vector<std::pair<std::string, double>> fleet_hit_fields(
    const std::vector<RequestRecord>& records, const FleetWorkload& work, double remote_objects) {
  double hit = 0;
  for (const RequestRecord& r : records) {
    if (r.path == RequestPath::kStaged || r.path == RequestPath::kOrdinary) hit += r.hit_chunks;
  }
  const double total = std::max<double>(1, double(work.prompt_chunks));
  const double remote = std::min(remote_objects, hit);
  return {{"hit_local", (hit - remote) / total},
          {"hit_remote", remote / total},
          {"miss", 1 - hit / total},
          {"remote_chunks", remote_objects}};
}

}  // namespace tempokv
