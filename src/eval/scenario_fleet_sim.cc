// fleet, simulated (docs/fleet.md): N engines, each with its own in-process stack (store on its
// own simulated SSD, fast tier, provider, controller), on one virtual clock, sharing a modelled
// cluster and network (SimRemoteCluster). What a prefill produces is written to the engine's
// store and published write-behind to the cluster. Requests go to engine i mod N. An engine's
// prefix lookup finds chunks its store lacks in the cluster (RemoteLookupStore); its provider
// holds the claim on them through the engine's SimRemoteSource, so the controller times it by
// the same laxity rule as any claim, with a TTR of the remote fetch (the daemon's
// RemoteTtrModel: a prior rate corrected by the fetches it sees finish, never the network's
// truth) + the store's write + the SSD -> tier read: under TempoKV that laxity starts the fetch
// and the local part's commits the claim (ControllerOptions::remote_prefetch).
#include <algorithm>

#include "common/percentile.h"
#include "common/units.h"
#include "eval/scenario_fleet.h"
#include "eval/scenarios.h"
#include "eval/sim_remote_source.h"

namespace tempokv {
namespace {

struct SimFleet {
  Runner& runner;
  const FleetWorkload& work;
  const CostProfile& profile;
  double tier_gib;
};

Result<FleetOutcome> run_fleet_sim_once(const SimFleet& f, const std::string& policy) {
  const EvalOptions& o = f.runner.options();
  const uint32_t n = f.work.engines;
  SimExecutor ex;
  const uint64_t chunk = round_up(256 * f.profile.kv_bytes_per_token, kBlockBytes);
  SimNetworkOptions no;
  no.nodes = std::max<uint32_t>(3, n / 2);
  no.seed = o.seed;
  SimRemoteCluster remote(ex, n, no);
  // Destroyed in reverse: stacks before the sources and views they borrow, those before the
  // storages.
  std::vector<std::unique_ptr<EvalStorage>> storages;
  std::vector<std::unique_ptr<SimRemoteSource>> sources;
  std::vector<std::unique_ptr<RemoteLookupStore>> views;
  std::vector<std::unique_ptr<EvalStack>> stacks;
  for (uint32_t k = 0; k < n; ++k) {
    StorageConfig sc = f.runner.sim_storage(chunk);
    sc.shared_sim = &ex;
    sc.sim_seed = o.seed * 1000 + k;
    TEMPOKV_ASSIGN_OR_RETURN(auto storage, EvalStorage::open(sc));
    Store& store = storage->store();
    // Write-behind: whatever lands in an engine's store is published (the cluster skips what
    // it holds already, such as objects fetched from it).
    store.set_index_listener([&remote, &store, k](const Key& key, bool added) {
      if (!added) return;
      if (auto info = store.lookup(key)) {
        remote.publish(k, key, info->payload_bytes, info->tokens);
      }
    });
    sources.push_back(std::make_unique<SimRemoteSource>(ex, remote, store, k));
    views.push_back(std::make_unique<RemoteLookupStore>(store, remote));
    StackConfig c = base_stack(f.runner, f.profile, policy, f.tier_gib);
    c.engines = 1;
    c.seed = o.seed + 1000 * k;
    c.write_produced_kv = true;
    c.prior_output_tokens = f.work.prior_output_tokens;
    c.remote_source = sources.back().get();
    c.lookup_store = views.back().get();
    storages.push_back(std::move(storage));
    TEMPOKV_ASSIGN_OR_RETURN(auto stack, EvalStack::create(*storages.back(), c));
    stacks.push_back(std::move(stack));
  }

  // The router: request i to engine i mod N, at its arrival.
  std::vector<std::vector<Request>> per(n);
  for (size_t i = 0; i < f.work.requests.size(); ++i) per[i % n].push_back(f.work.requests[i]);
  const TimePoint start = ex.now();
  for (uint32_t k = 0; k < n; ++k)
    TEMPOKV_RETURN_IF_ERROR(stacks[k]->submit(std::move(per[k]), start));
  const uint64_t total = f.work.requests.size();
  auto progress = [&](uint64_t, uint64_t) {
    uint64_t done = 0;
    for (const auto& s : stacks) done += s->finished();
    if (o.progress) o.progress("fleet " + policy, done, total);
  };
  // One clock: running stack k until its engine is done (and it drained) runs the others too.
  for (auto& s : stacks) TEMPOKV_RETURN_IF_ERROR(s->run(progress));
  for (auto& storage : storages) storage->store().set_index_listener(nullptr);

  double protected_gib_s = 0, recomputed_hits = 0;
  uint64_t commits = 0, refused = 0, refused_attempts = 0, fetches = 0, fetched_bytes = 0,
           prefetches = 0;
  std::vector<double> took_s, ttr_err;
  std::vector<RequestRecord> records;
  for (uint32_t k = 0; k < n; ++k) {
    const ControllerStats s = stacks[k]->controller().stats();
    protected_gib_s += s.protected_gib_s;
    commits += s.commits;
    prefetches += stacks[k]->provider().stats().remote_prefetches;
    refused += s.refused_claims;
    refused_attempts += s.refused_attempts;
    const SimRemoteSourceStats& rs = sources[k]->stats();
    fetches += rs.fetches;
    fetched_bytes += rs.bytes;
    took_s.insert(took_s.end(), rs.took_s.begin(), rs.took_s.end());
    ttr_err.insert(ttr_err.end(), rs.ttr_rel_error.begin(), rs.ttr_rel_error.end());
    for (RequestRecord r : stacks[k]->records()) {
      r.engine = k;
      // A hit that fell back to recompute (its claim failed): the engine prefilled it all.
      if (r.path == RequestPath::kRecompute) recomputed_hits += r.hit_chunks;
      records.push_back(r);
    }
  }
  const RunMetrics m =
      compute_metrics(records, protected_gib_s, storages.front()->config().sim_read_bytes_per_s);
  EvalRow row;
  row.scenario = "fleet";
  row.policy = policy;
  row.model = f.profile.model;
  row.truth = f.runner.truth_label();
  row.rate = f.work.rate;
  apply_run_metrics(m, row);
  row.engines = n;
  row.fast_tier_gib = double(stacks.front()->tier().options().capacity_bytes) / double(kGiB);
  row.budget_gib = double(stacks.front()->tier().options().protected_budget_bytes) / double(kGiB);
  row.commits = commits;
  row.refused_commits = refused;
  row.refused_attempts = refused_attempts;
  row.extra = fleet_hit_fields(records, f.work, double(fetches));
  for (auto&& kv : std::vector<std::pair<std::string, double>>{
           {"remote_gib", double(fetched_bytes) / double(kGiB)},
           {"remote_prefetches", double(prefetches)},
           {"remote_hit_recomputed_chunks", recomputed_hits},
           {"remote_fetch_p95_s", percentile(took_s, 0.95)},
           {"remote_ttr_rel_err_p50", percentile(ttr_err, 0.5)},
           {"published_gib", double(remote.stats().published_bytes) / double(kGiB)},
           {"late_claims", double(m.late_claims)},
           {"lateness_p95_s", m.lateness_p95_s}}) {
    row.extra.push_back(kv);
  }
  return FleetOutcome{std::move(row), start, std::move(records)};
}

}  // namespace

Status run_fleet_sim(Runner& runner, EvalResult& result) {
  const EvalOptions& o = runner.options();
  const ModeScale scale = mode_scale(runner);
  TEMPOKV_ASSIGN_OR_RETURN(CostProfile profile, runner.profile(scale.models.front().second));
  TEMPOKV_ASSIGN_OR_RETURN(FleetWorkload work, fleet_workload(runner, profile));
  // Per engine: the paper's tier unless told, at least four times the largest request's KV.
  const double tier_gib = o.fast_tier_gib.value_or(
      std::max(scale.fast_tier_gib, 4 * double(work.largest_request_bytes) / double(kGiB)));
  runner.note("fleet: " + std::to_string(work.engines) + " engines, " +
              std::to_string(work.requests.size()) + " requests, a cluster of " +
              std::to_string(std::max<uint32_t>(3, work.engines / 2)) +
              " nodes, 25 GB/s ports (latency 30 us, 1 % of transfers 3 ms)");
  SimFleet f{runner, work, profile, tier_gib};
  for (const std::string& policy : runner.policies(fleet_policies())) {
    TEMPOKV_ASSIGN_OR_RETURN(FleetOutcome run, run_fleet_sim_once(f, policy));
    add_fleet_outcome(result, std::move(run));
  }
  return Status::ok();
}

}  // namespace tempokv
