// fleet, real mode (docs/fleet.md): N emulated engines, each with its own tempokvd and local
// store, every daemon configured with [remote] seeds of one local Redis Cluster (FleetCluster,
// scripts/cluster), behind a round-robin router (request i to engine i mod N) replaying a
// conversation workload (fleet_workload.h). What an engine's prefill produced is put into its
// own daemon (FleetWriter) and published to the cluster, so a later turn routed to another
// engine finds it there: its daemon fetches it, verified, into its store at the claim's report
// and stages it like a local object. Per policy, a plain run and one with a master killed
// (SIGKILL) partway through the arrivals; each starts from empty stores and an empty cluster.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <unordered_set>

#include "common/units.h"
#include "eval/fleet_cluster.h"
#include "eval/fleet_writer.h"
#include "eval/scenario_fleet.h"
#include "eval/scenarios.h"

namespace tempokv {
namespace {

double stat(const service::StatList& stats, std::string_view name) {
  for (const auto& [n, v] : stats) {
    if (n == name) return v;
  }
  return 0;
}

// One policy's run of the fleet (plain or with a master killed).
struct FleetRun {
  Runner& runner;
  const FleetWorkload& work;
  FleetCluster& cluster;
  EvalStorage& storage;
  const CostProfile& profile;
  double tier_gib;
};

// Chunks a request found (locally or in the cluster) but recomputed: its claim failed (a remote
// fetch that missed is one such), so the engine prefilled the whole prompt.
double recomputed_hits(const std::vector<RequestRecord>& records) {
  double n = 0;
  for (const RequestRecord& r : records) {
    if (r.path == RequestPath::kRecompute) n += r.hit_chunks;
  }
  return n;
}

Result<FleetOutcome> run_fleet_once(FleetRun& f, const std::string& policy, bool kill_master) {
  const EvalOptions& o = f.runner.options();
  const uint32_t n = f.work.engines;
  TEMPOKV_RETURN_IF_ERROR(f.cluster.flush());
  int victim = 0;
  if (kill_master) {
    TEMPOKV_ASSIGN_OR_RETURN(std::vector<int> masters, f.cluster.masters());
    victim = masters.front();
  }
  std::string seeds;
  for (const std::string& s : f.cluster.seeds()) seeds += (seeds.empty() ? "" : ",") + s;

  std::vector<std::unique_ptr<EvalService>> daemons;
  std::vector<std::unique_ptr<EvalStack>> stacks;
  std::vector<std::string> endpoints;
  auto stop_all = [&]() -> Status {
    stacks.clear();
    Status first;
    for (auto& d : daemons) {
      Status st = d->stop();
      if (first.is_ok() && !st.is_ok()) first = st;
    }
    return first;
  };
  for (uint32_t k = 0; k < n; ++k) {
    const std::string dir = o.dir + "/fleet/engine-" + std::to_string(k);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);  // every run starts from an empty store
    auto d = std::make_unique<EvalService>(o.tempokvd, dir);
    d->set_extra_args({"--set", "remote.seeds=" + seeds});
    StackConfig sc = base_stack(f.runner, f.profile, policy, f.tier_gib);
    sc.engines = 1;
    sc.seed = o.seed + 1000 * k;  // each engine its own jitter stream
    sc.verify_bytes = true;
    sc.prior_output_tokens = f.work.prior_output_tokens;
    Status st = d->start(f.storage.config(), sc, *f.storage.real());
    daemons.push_back(std::move(d));
    if (!st.is_ok()) {
      (void)stop_all();
      return st;
    }
    sc.service_endpoint = daemons.back()->endpoint();
    sc.pipeline_reports = !o.service_blocking;
    endpoints.push_back(sc.service_endpoint);
    Result<std::unique_ptr<EvalStack>> stack = EvalStack::create(f.storage, sc);
    if (!stack.is_ok()) {
      (void)stop_all();
      return stack.status();
    }
    stacks.push_back(std::move(stack).value());
  }

  // The router: request i to engine i mod N.
  std::vector<std::vector<Request>> per(n);
  std::unordered_map<uint64_t, const Request*> by_id;
  for (size_t i = 0; i < f.work.requests.size(); ++i) {
    per[i % n].push_back(f.work.requests[i]);
    by_id[f.work.requests[i].id] = &f.work.requests[i];
  }
  Executor& ex = f.storage.executor();
  const TimePoint start = ex.now();
  for (uint32_t k = 0; k < n; ++k) {
    Status st = stacks[k]->submit(std::move(per[k]), start);
    if (!st.is_ok()) {
      (void)stop_all();
      return st;
    }
  }

  // Produced KV: every request whose prefill ended, the chunks it computed, to its daemon.
  FleetWriter writer(endpoints);
  std::vector<std::unordered_set<uint64_t>> written(n);
  TimerHandle poll_timer;
  std::function<void()> poll = [&] {
    for (uint32_t k = 0; k < n; ++k) {
      for (const RequestRecord& r : stacks[k]->records()) {
        if (!r.first_token || !written[k].insert(r.id).second) continue;
        const Request& q = *by_id.at(r.id);
        if (!q.writes_kv) continue;
        const size_t from = r.path == RequestPath::kRecompute ? 0 : r.hit_chunks;
        writer.enqueue(k, std::vector<CachedChunk>(
                              q.chunks.begin() + std::min(from, q.chunks.size()), q.chunks.end()));
      }
    }
    poll_timer = ex.after(std::chrono::milliseconds(5), poll);
  };
  poll();
  TimerHandle kill_timer;
  Status killed;
  if (kill_master) {
    kill_timer = ex.at(start + from_seconds(f.work.kill_at_s), [&] {
      killed = f.cluster.kill_node(victim);
      f.runner.note("fleet: " + policy + ": killed the master on port " + std::to_string(victim) +
                    " (SIGKILL) " + std::to_string(f.work.kill_at_s) + " s into the run");
    });
  }
  const auto wall_start = std::chrono::steady_clock::now();
  auto progress = [&](uint64_t, uint64_t) {
    if (!o.progress) return;
    uint64_t done = 0;
    for (auto& s : stacks) done += s->finished();
    o.progress("fleet " + policy, done, f.work.requests.size());
  };
  // One loop drives every engine: running stack k until its engines are done (and its daemon
  // drained) runs the others too. A drain that never ends is leaked protection, reported below.
  Status run_error;
  for (uint32_t k = 0; k < n; ++k) {
    Status st = stacks[k]->run(progress);
    if (!st.is_ok()) {
      if (!stacks[k]->engines_done()) {
        poll_timer.cancel();
        (void)writer.stop();
        (void)stop_all();
        return Status(st.code(), "fleet " + policy + ": " + st.message());
      }
      if (run_error.is_ok()) run_error = st;
    }
  }
  poll();  // the last prefills' chunks
  poll_timer.cancel();
  kill_timer.cancel();
  Status writer_status = writer.stop();
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  TEMPOKV_RETURN_IF_ERROR(killed);

  std::vector<RequestRecord> records;
  double protected_gib_s = 0, leaked = 0;
  double remote_objects = 0, remote_bytes = 0, remote_claims = 0, remote_misses = 0;
  double fetch_errors = 0, remote_refused = 0;
  uint64_t commits = 0, refused = 0, refused_attempts = 0, tier_bytes = 0, budget_bytes = 0;
  for (uint32_t k = 0; k < n; ++k) {
    for (RequestRecord r : stacks[k]->records()) {
      r.engine = k;
      records.push_back(r);
    }
    TEMPOKV_ASSIGN_OR_RETURN(service::StatList stats, daemons[k]->stats());
    TEMPOKV_ASSIGN_OR_RETURN(ControlCounters c, service_counters(stats));
    protected_gib_s += c.protected_gib_s;
    leaked += double(c.held_bytes);
    commits += c.commits;
    refused += c.refused_claims;
    refused_attempts += c.refused_attempts;
    tier_bytes = c.tier_bytes;
    budget_bytes = c.budget_bytes;
    remote_objects += stat(stats, "remote_objects_stored_total");
    remote_bytes += stat(stats, "remote_bytes_stored_total");
    remote_claims += stat(stats, "remote_claims_total");
    remote_misses += stat(stats, "remote_claim_misses_total");
    fetch_errors += stat(stats, "remote_claim_fetch_errors_total");
    remote_refused += stat(stats, "remote_claims_refused_unhealthy_total") +
                      stat(stats, "remote_claims_refused_slow_total");
  }
  TEMPOKV_RETURN_IF_ERROR(stop_all());
  if (!run_error.is_ok()) f.runner.note("fleet: " + policy + ": " + run_error.message());
  if (!writer_status.is_ok()) f.runner.note("fleet: writer: " + writer_status.message());

  const RunMetrics m = compute_metrics(records, protected_gib_s, Runner::kRealSsdBytesPerS);
  EvalRow row;
  row.scenario = "fleet";
  row.policy = policy + (kill_master ? "/master-killed" : "");
  row.model = f.profile.model;
  row.rate = f.work.rate;
  apply_run_metrics(m, row);
  row.engines = n;
  row.fast_tier_gib = double(tier_bytes) / double(kGiB);
  row.budget_gib = double(budget_bytes) / double(kGiB);
  row.commits = commits;
  row.refused_commits = refused;
  row.refused_attempts = refused_attempts;
  row.wall_s = wall_s;
  const FleetWriterStats w = writer.stats();
  row.extra = fleet_hit_fields(records, f.work, remote_objects);
  for (auto&& kv : std::vector<std::pair<std::string, double>>{
           {"remote_gib", remote_bytes / double(kGiB)},
           {"remote_claims", remote_claims},
           {"remote_hit_recomputed_chunks", recomputed_hits(records)},
           {"remote_claim_misses", remote_misses},
           {"remote_fetch_errors", fetch_errors},
           {"remote_claims_refused", remote_refused},
           {"written_chunks", double(w.puts)},
           {"write_failures", double(w.failures)},
           {"wrong_chunks", double(m.mismatched_chunks)},
           {"verified_chunks", double(m.verified_chunks)},
           {"leaked_bytes", leaked},
           {"master_killed", kill_master ? 1.0 : 0.0}}) {
    row.extra.push_back(kv);
  }
  return FleetOutcome{std::move(row), start, std::move(records)};
}

}  // namespace

Status run_fleet_real(Runner& runner, EvalResult& result) {
  const EvalOptions& o = runner.options();
  if (o.tempokvd.empty()) {
    return Status::invalid_argument(
        "--scenario fleet --mode real runs a tempokvd per engine: pass --via-service or "
        "--tempokvd PATH");
  }
  if (o.cluster_script.empty()) {
    return Status::invalid_argument(
        "--scenario fleet --mode real needs scripts/cluster "
        "(EvalOptions::cluster_script)");
  }
  const ModeScale scale = mode_scale(runner);
  TEMPOKV_ASSIGN_OR_RETURN(CostProfile profile, runner.profile(scale.models.front().second));
  TEMPOKV_ASSIGN_OR_RETURN(FleetWorkload work, fleet_workload(runner, profile));
  const double tier_gib = o.fast_tier_gib.value_or(
      std::max(0.5, 4 * double(work.largest_request_bytes) / double(kGiB)));

  FleetCluster cluster(o.cluster_script, o.dir + "/cluster", fleet_cluster_port());
  std::error_code ec;
  const bool created = !std::filesystem::exists(o.dir, ec);
  std::filesystem::create_directories(o.dir, ec);
  TEMPOKV_RETURN_IF_ERROR(cluster.up());
  runner.note("fleet: a Redis Cluster of 3 masters + 3 replicas on " + cluster.seeds().front() +
              "..; " + std::to_string(work.engines) + " engines, each with its own tempokvd");
  StorageConfig sc;
  sc.mode = EvalMode::kReal;
  sc.chunk_bytes = round_up(256 * profile.kv_bytes_per_token, kBlockBytes);
  sc.capacity_bytes = Runner::kRealStoreCapacityBytes;
  sc.local_store = false;
  TEMPOKV_ASSIGN_OR_RETURN(auto storage, EvalStorage::open(sc));
  FleetRun f{runner, work, cluster, *storage, profile, tier_gib};
  // The first run after the daemons and the cluster start is slower than the rest, whichever
  // policy it is (docs/fleet.md): one plain run first, not reported (as Runner::run's warm-up),
  // and the policies in an order rotated by the seed, so that over --seeds each policy runs at
  // every place in turn. Rows keep the policies' order.
  const std::vector<std::string> policies = runner.policies(fleet_policies());
  const std::vector<size_t> order = fleet_run_order(policies.size(), o.seed);
  std::vector<std::optional<FleetOutcome>> outcomes(2 * policies.size());
  Status st;
  if (!order.empty()) {
    Result<FleetOutcome> warm = run_fleet_once(f, policies[order.front()], false);
    if (!warm.is_ok()) st = warm.status();
    if (st.is_ok()) {
      runner.note("fleet: a warm-up run of " + policies[order.front()] +
                  " first, not reported (p95 TTFT " +
                  std::to_string(std::lround(warm->row.p95_ttft_s * 1e3)) + " ms)");
    }
  }
  for (size_t i : order) {
    if (!st.is_ok()) break;
    for (bool kill : {false, true}) {
      Result<FleetOutcome> run = run_fleet_once(f, policies[i], kill);
      if (!run.is_ok()) {
        st = run.status();
        break;
      }
      outcomes[2 * i + (kill ? 1 : 0)] = std::move(run).value();
      if (kill) {
        // A fresh cluster for the next run: the killed node's replica serves its slots now.
        st = cluster.down();
        if (st.is_ok()) st = cluster.up();
        if (!st.is_ok()) break;
      }
    }
  }
  for (std::optional<FleetOutcome>& run : outcomes) {
    if (run) add_fleet_outcome(result, std::move(*run));
  }
  Status down = cluster.down();
  if (!o.keep) {
    std::filesystem::remove_all(o.dir + "/fleet", ec);
    if (created) std::filesystem::remove(o.dir, ec);
  }
  return st.is_ok() ? down : st;
}

}  // namespace tempokv
