// fleet, simulated (docs/fleet.md): N engines, each with its own in-process stack (store on its
// own simulated SSD, fast tier, provider, controller), on one virtual clock, sharing a modelled
// cluster and network (SimRemoteCluster). What a prefill produces is written to the engine's
// store and published write-behind to the cluster. The router sends request i to engine
// i mod N; when the leading chunks its engine's store lacks are in the cluster, it times their
// fetch with the remote TTR model (remote::RemoteTtrModel, the daemon's: a prior rate it
// corrects from the fetches it sees finish, never the network's truth), fetches them into the
// engine's store (SSD writes) and then hands the request to the engine, as today's tempokvd
// fetches a remote-only claim's objects before the claim exists; a fetch whose TTR is above the
// daemon's bound (remote.max_claim_fetch_ms, 2 s) is not made and the engine recomputes. TTFT
// counts from the arrival at the router, so it includes the fetch.
#include <algorithm>
#include <map>

#include "common/percentile.h"
#include "common/units.h"
#include "eval/scenario_fleet.h"
#include "eval/scenarios.h"
#include "eval/sim_remote.h"
#include "remote/remote_ttr.h"

namespace tempokv {
namespace {

constexpr Duration kMaxClaimFetch = std::chrono::milliseconds(2000);

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
  std::vector<std::unique_ptr<EvalStorage>> storages;
  std::vector<std::unique_ptr<EvalStack>> stacks;
  SimNetworkOptions no;
  no.nodes = std::max<uint32_t>(3, n / 2);
  no.seed = o.seed;
  SimRemoteCluster remote(ex, n, no);
  for (uint32_t k = 0; k < n; ++k) {
    StorageConfig sc = f.runner.sim_storage(chunk);
    sc.shared_sim = &ex;
    sc.sim_seed = o.seed * 1000 + k;
    TEMPOKV_ASSIGN_OR_RETURN(auto storage, EvalStorage::open(sc));
    StackConfig c = base_stack(f.runner, f.profile, policy, f.tier_gib);
    c.engines = 1;
    c.seed = o.seed + 1000 * k;
    c.write_produced_kv = true;
    c.prior_output_tokens = f.work.prior_output_tokens;
    TEMPOKV_ASSIGN_OR_RETURN(auto stack, EvalStack::create(*storage, c));
    // Write-behind: whatever lands in an engine's store is published (the cluster skips what
    // it holds already, such as objects fetched from it).
    Store& store = storage->store();
    store.set_index_listener([&remote, &store, k](const Key& key, bool added) {
      if (!added) return;
      if (auto info = store.lookup(key)) remote.publish(k, key, info->payload_bytes);
    });
    storages.push_back(std::move(storage));
    stacks.push_back(std::move(stack));
  }

  remote::RemoteTtrModel ttr;  // the daemon's model, its prior rate (2 GiB/s) until it measures
  std::unordered_map<uint64_t, TimePoint> arrival_of;
  // Requests served after a fetch: the chunks their engine had then (local prefix + fetched).
  std::unordered_map<uint64_t, size_t> fetched_prefix;
  uint64_t routed = 0, remote_chunks = 0, refused_slow = 0, fetches = 0;
  std::vector<double> fetch_s, ttr_rel_err;
  auto submit_now = [&](uint32_t k, Request q) {
    q.arrival = Duration::zero();
    Status st = stacks[k]->engines().front()->submit({std::move(q)}, ex.now());
    (void)st;  // ids are unique and every request has a prompt: submit cannot refuse it
    ++routed;
  };
  auto route = [&](size_t i) {
    const uint32_t k = static_cast<uint32_t>(i % n);
    const Request& r = f.work.requests[i];
    arrival_of[r.id] = ex.now();
    Store& store = storages[k]->store();
    size_t j = 0;
    while (j < r.chunks.size() && store.contains(r.chunks[j].key)) ++j;
    std::vector<SimRemoteCluster::Object> objects;
    std::map<std::string, uint64_t> by_node;
    for (; j < r.chunks.size() && remote.contains(r.chunks[j].key); ++j) {
      objects.push_back({r.chunks[j].key, r.chunks[j].bytes});
      by_node["node-" + std::to_string(remote.node_of(r.chunks[j].key))] += r.chunks[j].bytes;
    }
    if (objects.empty()) return submit_now(k, r);
    std::vector<remote::RemoteTtrModel::Part> parts;
    for (const auto& [node, bytes] : by_node) parts.push_back({node, bytes});
    const std::optional<Duration> projected = ttr.ttr(parts, ex.now());
    if (!projected || *projected > kMaxClaimFetch) {
      ++refused_slow;
      return submit_now(k, r);
    }
    for (const auto& [node, bytes] : by_node) ttr.started(node, bytes);
    ++fetches;
    fetched_prefix[r.id] = j;
    remote.fetch(k, objects, [&, k, i, by_node, objects, projected = *projected](Duration took) {
      for (const auto& [node, bytes] : by_node) {
        ttr.finished(node, bytes, took, true, false, ex.now());
      }
      fetch_s.push_back(to_seconds(took));
      ttr_rel_err.push_back(std::abs(to_seconds(projected - took)) /
                            std::max(1e-9, to_seconds(took)));
      remote_chunks += objects.size();
      // Into the engine's store (its SSD's writes), then to the engine.
      auto left = std::make_shared<size_t>(objects.size());
      const Request& q = f.work.requests[i];
      for (size_t c = 0; c < objects.size(); ++c) {
        const CachedChunk& cc =
            *std::find_if(q.chunks.begin(), q.chunks.end(),
                          [&](const CachedChunk& x) { return x.key == objects[c].key; });
        storages[k]->store().put(cc.key, cc.tokens, nullptr, cc.bytes, [&, k, i, left](Status) {
          if (--*left == 0) submit_now(k, f.work.requests[i]);
        });
      }
    });
  };
  const TimePoint start = ex.now();
  for (size_t i = 0; i < f.work.requests.size(); ++i) {
    ex.at(start + f.work.requests[i].arrival, [&route, i] { route(i); });
  }
  const uint64_t total = f.work.requests.size();
  auto all_done = [&] {
    if (routed < total) return false;
    return std::all_of(stacks.begin(), stacks.end(),
                       [](const auto& s) { return s->engines_done(); });
  };
  auto progress = [&] {
    uint64_t done = 0;
    for (const auto& s : stacks) done += s->finished();
    if (o.progress) o.progress("fleet " + policy, done, total);
  };
  TEMPOKV_RETURN_IF_ERROR(storages.front()->drive(all_done, progress));
  // Every stack drains its reservations and reads (C covers the whole run).
  double protected_gib_s = 0;
  uint64_t commits = 0, refused = 0, refused_attempts = 0;
  std::vector<RequestRecord> records;
  for (uint32_t k = 0; k < n; ++k) {
    TEMPOKV_RETURN_IF_ERROR(stacks[k]->run(nullptr));
    const ControllerStats s = stacks[k]->controller().stats();
    protected_gib_s += s.protected_gib_s;
    commits += s.commits;
    refused += s.refused_claims;
    refused_attempts += s.refused_attempts;
    for (RequestRecord r : stacks[k]->records()) {
      r.engine = k;
      r.arrival = arrival_of.at(r.id);  // the router's arrival: the fetch is part of TTFT
      records.push_back(r);
    }
  }
  // Remote hits recompute nothing: every chunk fetched for a request is one its engine loads.
  double remote_recomputed = 0;
  for (const RequestRecord& r : records) {
    auto it = fetched_prefix.find(r.id);
    if (it == fetched_prefix.end()) continue;
    const bool loaded = r.path == RequestPath::kStaged || r.path == RequestPath::kOrdinary;
    remote_recomputed +=
        double(it->second) - (loaded ? std::min<double>(r.hit_chunks, it->second) : 0);
  }
  const RunMetrics m =
      compute_metrics(records, protected_gib_s, storages.front()->config().sim_read_bytes_per_s);
  EvalRow row;
  row.scenario = "fleet";
  row.policy = policy;
  row.model = f.profile.model;
  row.truth = o.truth;
  row.rate = f.work.rate;
  apply_run_metrics(m, row);
  row.engines = n;
  row.fast_tier_gib = double(stacks.front()->tier().options().capacity_bytes) / double(kGiB);
  row.budget_gib = double(stacks.front()->tier().options().protected_budget_bytes) / double(kGiB);
  row.commits = commits;
  row.refused_commits = refused;
  row.refused_attempts = refused_attempts;
  row.extra = fleet_hit_fields(records, f.work, double(remote_chunks));
  const SimRemoteStats rs = remote.stats();
  for (auto&& kv : std::vector<std::pair<std::string, double>>{
           {"remote_gib", double(rs.fetched_bytes) / double(kGiB)},
           {"remote_fetches", double(fetches)},
           {"remote_hit_recomputed_chunks", remote_recomputed},
           {"remote_refused_slow", double(refused_slow)},
           {"remote_fetch_p95_s", fetch_s.empty() ? 0.0 : percentile(fetch_s, 0.95)},
           {"remote_ttr_rel_err_p50", ttr_rel_err.empty() ? 0.0 : percentile(ttr_rel_err, 0.5)},
           {"published_gib", double(rs.published_bytes) / double(kGiB)},
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
