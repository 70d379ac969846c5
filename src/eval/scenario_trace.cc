// trace: the Mooncake conversation trace replayed on N data-parallel engines sharing one store,
// fast tier and controller (DESIGN.md §2 Workloads). KV produced by prefills is written to the
// store (sharing the SSD with staging reads) and becomes the hits of later requests.
//
// Load: the trace is cluster-wide traffic, so the engine count sets the load. The offered work is
// estimated before the run from the trace alone, per request:
//   prefill(prompt − reusable prefix) + retrieval(reusable prefix bytes)
//   + output × decode_step(B × (prompt + output / 2), B) / B     (a full batch of B = max active)
// where the reusable prefix is the request's leading blocks already seen earlier in the replay.
// Utilisation = offered work / (engines × arrival span). The default engine count is the least
// that keeps it at or below 70 %.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <unordered_set>

#include "common/units.h"
#include "eval/scenarios.h"
#include "workload/mooncake_trace.h"

namespace tempokv {
namespace {

constexpr double kTargetUtilisation = 0.70;

struct TraceLoad {
  double work_s = 0;            // offered engine-seconds
  double span_s = 0;            // first to last arrival
  uint64_t reuse_blocks = 0;    // distinct blocks that a later request reuses
  uint64_t hit_requests = 0;    // requests with a reusable prefix
  double reusable_gib = 0;      // Σ reusable prefix bytes
};

TraceLoad estimate_load(const std::vector<TraceRecord>& records, const std::vector<Request>& reqs,
                        const CostProfile& p, uint32_t block_tokens, uint32_t batch) {
  TraceLoad l;
  std::unordered_set<uint64_t> seen, reused;
  for (size_t i = 0; i < records.size() && i < reqs.size(); ++i) {
    const TraceRecord& t = records[i];
    const Request& r = reqs[i];
    uint64_t hit_blocks = 0;
    for (uint64_t h : t.hash_ids) {
      if (!seen.count(h)) break;
      ++hit_blocks;
    }
    for (uint64_t h : t.hash_ids) {
      if (!seen.insert(h).second) reused.insert(h);
    }
    const uint32_t hit_tokens =
        std::min<uint64_t>(hit_blocks * block_tokens, r.prompt_tokens > 0 ? r.prompt_tokens - 1 : 0);
    const uint64_t hit_bytes = uint64_t(hit_tokens) * p.kv_bytes_per_token;
    if (hit_tokens > 0) ++l.hit_requests;
    l.reusable_gib += double(hit_bytes) / double(kGiB);
    const uint32_t out = r.true_output_tokens();
    l.work_s += to_seconds(p.prefill(r.prompt_tokens - hit_tokens));
    if (hit_bytes) l.work_s += to_seconds(p.retrieval(hit_bytes));
    const uint64_t context = uint64_t(batch) * (r.prompt_tokens + out / 2);
    l.work_s += double(out) * to_seconds(p.decode_step(context, batch)) / double(batch);
  }
  l.reuse_blocks = reused.size();
  if (!reqs.empty()) l.span_s = to_seconds(reqs.back().arrival - reqs.front().arrival);
  return l;
}

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

}  // namespace

Status run_trace(Runner& runner, EvalResult& result) {
  const EvalOptions& o = runner.options();
  if (!std::filesystem::exists(o.trace_path)) {
    runner.note("trace: " + o.trace_path +
                " is absent; scenario skipped (pass --trace FILE; see shared/traces/README.md)");
    result.skipped = true;
    return Status::ok();
  }
  TEMPOKV_ASSIGN_OR_RETURN(auto records, load_trace(o.trace_path));
  const ModeScale scale = mode_scale(runner);
  const auto& [model, profile_name] = scale.models.front();
  TEMPOKV_ASSIGN_OR_RETURN(CostProfile profile, runner.profile(profile_name));

  TraceReplayOptions ro;
  ro.model = profile.model;
  ro.kv_bytes_per_token = profile.kv_bytes_per_token;
  ro.window_start = from_seconds(o.window_start_s);
  if (o.window_s) {
    ro.window_duration = from_seconds(*o.window_s);
  } else if (!runner.sim()) {
    ro.window_duration = std::chrono::seconds(60);  // real mode: a minute of this machine's disk
  }
  ro.time_scale = o.time_scale;
  ro.token_seed = o.seed;
  TEMPOKV_ASSIGN_OR_RETURN(auto requests, make_trace_requests(records, ro));
  if (requests.empty()) return Status::invalid_argument("trace: the window holds no request");
  // The records replayed, in the same order as the requests (the window selects a run of them).
  std::vector<TraceRecord> window;
  const double w0_ms = o.window_start_s * 1000;
  for (const TraceRecord& t : records) {
    if (t.timestamp_ms < w0_ms) continue;
    if (ro.window_duration && t.timestamp_ms >= w0_ms + to_seconds(*ro.window_duration) * 1000) {
      continue;
    }
    window.push_back(t);
  }

  StackConfig probe = base_stack(runner, profile, "tempokv", scale.fast_tier_gib);
  const TraceLoad load =
      estimate_load(window, requests, profile, ro.block_tokens, probe.max_active);
  uint32_t engines = o.engines;
  if (engines == 0) {
    engines = std::max<uint32_t>(
        1, static_cast<uint32_t>(std::ceil(load.work_s / (kTargetUtilisation * load.span_s))));
  }
  const double utilisation = load.work_s / (double(engines) * load.span_s);
  const double block_gib = double(ro.block_tokens) * double(profile.kv_bytes_per_token) / double(kGiB);
  const double reuse_gib = double(load.reuse_blocks) * block_gib;
  double tier_gib = o.fast_tier_gib.value_or(scale.fast_tier_gib);
  if (!o.fast_tier_gib && tier_gib >= reuse_gib / 4) {
    // Keep reuse from fitting, but leave room for twice the largest request's KV (the protected
    // budget, half the tier, must hold any one claim).
    uint64_t largest = 0;
    for (const Request& r : requests) largest = std::max(largest, r.chunk_bytes(r.chunks.size()));
    tier_gib = std::max(reuse_gib / 4, 4 * double(largest) / double(kGiB));
  }
  if (tier_gib >= reuse_gib) runner.note("trace: the window is too short for reuse to outgrow the tier");
  runner.note(fmt("trace: %.0f requests over %.0f s of arrivals (time scale %g)",
                  double(requests.size()), load.span_s, o.time_scale));
  runner.note(fmt("trace: offered work %.0f engine-s (prefill of the tokens not in an earlier "
                  "request's prefix + retrieval of that prefix + decode at a full batch of %g)",
                  load.work_s, double(probe.max_active)));
  runner.note(fmt("trace: utilisation = work / (engines x span) = %.0f / (%g x %.0f s) = %.0f %%",
                  load.work_s, double(engines), load.span_s, 100 * utilisation));
  runner.note(fmt("trace: reuse footprint %.1f GiB (%.0f distinct blocks seen again, %.3f GiB each) "
                  "vs fast tier %.1f GiB",
                  reuse_gib, double(load.reuse_blocks), block_gib, tier_gib));
  runner.note(fmt("trace: %.0f requests (%.0f %%) have a reusable prefix, %.1f GiB of it in all",
                  double(load.hit_requests), 100.0 * double(load.hit_requests) / double(requests.size()),
                  load.reusable_gib));

  for (const std::string& policy :
       runner.policies({std::begin(kAllPolicies), std::end(kAllPolicies)})) {
    RunSpec spec;
    spec.label = "trace " + policy;
    spec.row.scenario = "trace";
    spec.row.policy = policy;
    spec.row.model = model;
    spec.row.ratio = 0;  // the trace's own reuse
    spec.row.rate = double(requests.size()) / std::max(load.span_s, 1e-9);
    spec.stack = base_stack(runner, profile, policy, tier_gib);
    spec.stack.engines = engines;
    spec.stack.write_produced_kv = true;
    spec.stack.prior_output_tokens = 512;  // before any completion; the trace's outputs run long
    spec.requests = requests;
    spec.precompute = false;
    spec.fresh_storage = true;  // real mode: every policy starts from an empty store
    spec.after_run = [utilisation, reuse_gib](EvalStack& s, TimePoint, EvalRow& row) {
      uint64_t hits = 0;
      for (const RequestRecord& r : s.records()) hits += r.hit_chunks > 0;
      const KvWriterStats w = s.writer() ? s.writer()->stats() : KvWriterStats{};
      row.extra = {{"utilisation", utilisation},
                   {"reuse_footprint_gib", reuse_gib},
                   {"hit_requests", double(hits)},
                   {"written_gib", double(w.bytes) / double(kGiB)}};
    };
    TEMPOKV_ASSIGN_OR_RETURN(EvalRow row, runner.run(std::move(spec)));
    runner.note("trace: " + policy + fmt(" replayed in %.1f s of wall time", row.wall_s));
  }
  return Status::ok();
}

}  // namespace tempokv
