// ServiceCore: counters for the stats op and /metrics, and the projection-error histograms.
#include "daemon/service_metrics.h"

#include <cctype>
#include <map>

#include "common/error_buckets.h"
#include "common/percentile.h"
#include "daemon/service_state.h"

namespace tempokv::service {

std::vector<double> ServiceCore::Histograms::error_bounds() {
  return projection_error_bounds();  // the eval's rows use the same buckets
}

void ServiceCore::Histograms::Recent::add(double v) {
  if (values.size() < kRecent) {
    values.push_back(v);
  } else {
    values[next] = v;
  }
  next = (next + 1) % kRecent;
}

void ServiceCore::record_claim_end(uint64_t request_id) {
  Result<ClaimInfo> info = controller_->info(request_id);
  if (!info.is_ok()) return;
  const ClaimTimeline& t = info->timeline;
  Histograms& h = *histograms_;
  if (t.committed && t.ready && info->ttr_at_commit) {
    const double e = to_seconds(*t.ready - *t.committed - *info->ttr_at_commit);
    h.ttr_error.observe(e);
    h.ttr_recent.add(e);
  }
  // A claim committed before any order update projected its use (Immediate commits at the hit
  // report) carries the adapter's "unknown" use time, an hour away: no projection to score.
  const bool use_projected = info->projected_use_at_commit && t.committed &&
                             *info->projected_use_at_commit - *t.committed < kPlaceholderUse;
  if (t.retrieval_requested && use_projected) {
    const double e = to_seconds(*t.retrieval_requested - *info->projected_use_at_commit);
    h.ttu_error.observe(e);
    h.ttu_recent.add(e);
  }
  Histograms::Ended ended{request_id, "", *info};
  if (auto it = owner_.find(request_id); it != owner_.end()) {
    ended.request_id = request_id ^ it->second->id_salt;  // the id the runtime knows
    ended.runtime = it->second->name;
  }
  h.ended.push_back(std::move(ended));
  if (h.ended.size() > Histograms::kEndedClaims) h.ended.pop_front();
  if (t.committed && t.ready && t.retrieval_requested) {
    const double late = to_seconds(*t.ready - *t.retrieval_requested);
    h.lateness.observe(late);
    h.lateness_recent.add(late);
    ++h.timed_claims;
    if (late > 0) ++h.late_claims;
  }
}

std::vector<Metric> ServiceCore::metrics() const {
  const Counters& counters = counters_;
  std::vector<Metric> m;
  auto add = [&](std::string name, std::string help, MetricType type, double value,
                 Labels labels = {}) {
    m.push_back(Metric{std::move(name), std::move(help), type, std::move(labels), value});
  };
  constexpr auto kC = MetricType::kCounter;
  constexpr auto kG = MetricType::kGauge;
  // Live claims by state (released ones are forgotten; they are in the counters below).
  auto state_label = [](ClaimState s) {
    std::string name(claim_state_name(s));
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return name;
  };
  std::map<std::string, double> by_state;
  for (ClaimState s : {ClaimState::kPlanned, ClaimState::kStaging, ClaimState::kStageReady,
                       ClaimState::kTransferring, ClaimState::kOrdinary})
    by_state[state_label(s)] = 0;
  for (const ClaimInfo& c : controller_->claims()) {
    if (c.state != ClaimState::kReleased) by_state[state_label(c.state)] += 1;
  }
  for (const auto& [state, n] : by_state)
    add("claims", "Live claims, by state", kG, n, {{"state", state}});
  const ControllerStats cs = controller_->stats();
  add("claims_reported_total", "Claims reported (hits)", kC, double(cs.reported));
  add("commits_total", "Commits that succeeded", kC, double(cs.commits));
  add("commits_refused_total", "Commit attempts refused for budget or capacity", kC,
      double(cs.refused_attempts));
  add("claims_refused_total", "Claims refused at least once for budget or capacity", kC,
      double(cs.refused_claims));
  add("claims_ordinary_total", "Claims that took the ordinary path", kC, double(cs.ordinary));
  add("claims_cancelled_total", "Claims cancelled", kC, double(cs.cancelled));
  add("claims_failed_total", "Claims failed by a read error", kC, double(cs.failed));
  add("protected_gib_seconds_total", "C: integral of protected + reserved GiB over time", kC,
      cs.protected_gib_s);
  add("controller_evaluations_total", "Controller reevaluation passes", kC, double(cs.evaluations));
  add("controller_ticks_total", "Controller ticks (periodic reevaluations)", kC, double(cs.ticks));
  const FastTierStats ts = tier_->stats();
  add("tier_capacity_bytes", "Fast tier size", kG, double(ts.capacity_bytes));
  add("tier_budget_bytes", "Protected budget", kG, double(ts.budget_bytes));
  add("tier_protected_bytes", "Fast tier bytes protected for committed claims", kG,
      double(ts.protected_bytes));
  add("tier_reserved_bytes", "Fast tier bytes reserved for staging on its way", kG,
      double(ts.reserved_bytes));
  add("tier_resident_bytes", "Fast tier bytes resident", kG, double(ts.resident_bytes));
  add("tier_filling_bytes", "Fast tier bytes an SSD read is writing", kG, double(ts.filling_bytes));
  add("tier_evictions_total", "Objects evicted from the fast tier", kC, double(ts.evictions));
  const ProviderStats ps = provider_->stats();
  add("staging_rate_bytes_per_second", "Calibrated SSD -> tier read rate", kG, ps.read_bytes_per_s);
  add("ssd_write_cost", "Calibrated device time of a byte written, in bytes read (0: unseen)", kG,
      ps.write_cost);
  add("ssd_writes_while_reading",
      "Learned mean of the store's writes in flight while reads are (TTR's background)", kG,
      ps.writes_while_reading);
  add("ssd_read_bytes_total", "Payload bytes read from the SSD into the tier", kC,
      double(ps.bytes_read));
  add("ssd_reads_total", "Reads issued to the store", kC, double(ps.reads_issued));
  add("ssd_read_errors_total", "Reads that failed", kC, double(ps.read_errors));
  add("reads_in_flight", "Store reads in flight", kG, double(ps.in_flight_reads));
  add("reads_queued", "Store reads queued", kG, double(ps.queued_reads));
  const StoreStats ss = store_->stats();
  add("store_objects", "Objects in the store", kG, double(ss.objects));
  add("store_live_bytes", "Payload bytes in the store", kG, double(ss.live_bytes));
  add("store_puts_total", "Objects written to the store", kC, double(ss.puts));
  add("store_dropped_records_total", "Store objects dropped after failing their checksum on a read",
      kC, double(ss.dropped_records));
  add("store_unchanged_puts_total", "Puts of the bytes already stored under the key (no write)",
      kC, double(ss.unchanged_puts));
  add("tier_stale_copies_dropped_total",
      "Fast-tier copies of an older store generation evicted when found", kC,
      double(ps.stale_copies_dropped));
  add("claims_changed_under_total",
      "Claims failed because their object was put again with other bytes under them", kC,
      double(ps.changed_under_claim));
  add("sessions", "Open sessions", kG, double(sessions_.size()));
  add("runtimes", "Runtimes with at least one session", kG, double(runtimes_.size()));
  add("sessions_opened_total", "Sessions opened", kC, double(counters.sessions_opened));
  add("sessions_closed_total", "Sessions ended (bye, disconnect, timeout)", kC,
      double(counters.sessions_closed));
  add("requests_total", "Requests of open sessions", kC, double(counters.requests));
  add("request_errors_total", "Requests answered with an error", kC, double(counters.errors));
  add("puts_total", "Puts through the write region", kC, double(counters.puts));
  add("put_bytes_total", "Bytes put through the write region", kC, double(counters.put_bytes));
  add("puts_failed_total", "Puts that failed", kC, double(counters.failed_puts));
  add("claims_abandoned_total", "Claims cancelled because their runtime's last session ended",
      kC, double(counters.claims_abandoned));
  add("steps_total", "Step messages (protocol v2) handled", kC, double(counters.steps));
  add("steps_missed_total", "Step sequence numbers skipped (steps never received)", kC,
      double(counters.steps_missed));
  add("step_edits_total", "Steps that gave their decoders and waiting order as edits of the last",
      kC, double(counters.step_edits));
  // Each runtime's adapter, labelled with its runtime id (the hello's runtime_id); one family
  // after the other, as the exposition format wants.
  auto per_runtime = [&](const char* name, const char* help, MetricType type, auto value) {
    for (const auto& [key, rt] : runtimes_) {
      add(name, help, type, value(*rt->adapter), {{"runtime", std::to_string(rt->id)}});
    }
  };
  per_runtime("adapter_waiting_requests", "Requests the adapter has in the waiting queue", kG,
              [](const RuntimeAdapter& a) { return double(a.stats().waiting); });
  per_runtime("adapter_running_requests", "Requests the adapter has admitted, not finished", kG,
              [](const RuntimeAdapter& a) { return double(a.stats().running); });
  per_runtime("adapter_cost_scale",
              "Measured prefill time / the cost profile's (online calibration)", kG,
              [](const RuntimeAdapter& a) { return a.cost_scale(); });
  per_runtime("adapter_decode_scale",
              "Measured decode step time / the cost profile's (online calibration)", kG,
              [](const RuntimeAdapter& a) { return a.decode_cost_scale(); });
  per_runtime("adapter_iterations_calibrated_total",
              "Measured iterations that calibrated the costs", kC,
              [](const RuntimeAdapter& a) { return double(a.stats().iterations_calibrated); });
  per_runtime("adapter_token_budget",
              "Tokens per step the runtime's hello declared (chunked prefill); 0: whole prefills",
              kG, [](const RuntimeAdapter& a) { return double(a.token_budget()); });
  per_runtime("adapter_async_loads",
              "1 when the runtime's hello declared asynchronous loads (they hold no slot)", kG,
              [](const RuntimeAdapter& a) { return a.async_loads() ? 1.0 : 0.0; });
  per_runtime("adapter_wait_order_statistics",
              "1 when the runtime's TTU lets its decoders complete at the expected order "
              "statistics of their remaining outputs (TempoKV's configurations), 0: at their means",
              kG, [](const RuntimeAdapter& a) { return a.wait_order_statistics() ? 1.0 : 0.0; });
  per_runtime("adapter_load_scale",
              "Measured copy time / the cost profile's retrieval cost (median of the last 9); 0: "
              "none measured",
              kG, [](const RuntimeAdapter& a) { return a.load_scale(); });
  per_runtime("adapter_runtime_measures", "1 when the runtime reports its own iteration times",
              kG, [](const RuntimeAdapter& a) { return a.stats().runtime_measures ? 1.0 : 0.0; });
  add("write_region_used_bytes", "Write region bytes reserved, every runtime's region together",
      kG, double(write_reserved_));
  uint64_t regions = 0;
  for (const auto& [name, rt] : runtimes_) regions += rt->writes ? 1 : 0;
  add("write_regions", "Runtimes with a write region", kG, double(regions));
  add("write_regions_made_total", "Write regions made (one at a runtime's first reserve_write)",
      kC, double(counters_.write_regions_made));
  add("put_checksum_mismatches_total",
      "Puts refused because the bytes in the write region did not hash to the declared checksum",
      kC, double(counters_.put_checksum_mismatches));
  const Histograms& h = *histograms_;
  add("timed_claims_total", "Committed claims that got ready and whose retrieval was requested", kC,
      double(h.timed_claims));
  add("late_claims_total", "Timed claims ready after their retrieval was requested", kC,
      double(h.late_claims));
  // Exact quantiles over the last Histograms::kRecent claims (0 before the first).
  const std::pair<const char*, const Histograms::Recent*> recent[] = {
      {"ttr_error", &h.ttr_recent}, {"ttu_error", &h.ttu_recent}, {"lateness", &h.lateness_recent}};
  for (const auto& [name, r] : recent) {
    for (const auto& [q, label] : {std::pair{0.5, "p50"}, std::pair{0.95, "p95"}}) {
      add(std::string(name) + "_" + label + "_seconds",
          std::string(name) + " quantile over the last claims, seconds", kG,
          percentile(r->values, q));
    }
  }
  if (remote_) add_remote_metrics(m);
  if (transport_metrics_) transport_metrics_(m);
  return m;
}

StatList ServiceCore::stats() const {
  const std::vector<Metric> m = metrics();
  StatList out;
  out.reserve(m.size());
  for (const Metric& x : m) {
    std::string name = x.name;
    for (const auto& [k, v] : x.labels) name += "_" + v;
    out.emplace_back(std::move(name), x.value);
  }
  return out;
}

std::string ServiceCore::metrics_text() const {
  const std::vector<Metric> m = metrics();
  PrometheusWriter w;
  std::string family;
  for (const Metric& x : m) {
    const std::string name = "tempokv_" + x.name;
    // A summary's _sum and _count belong to its family: no header of their own.
    const bool part = x.type == MetricType::kSummary &&
                      (name == family + "_sum" || name == family + "_count");
    if (name != family && !part) {
      w.family(name, x.help, x.type);
      family = name;
    }
    w.sample(name, x.labels, x.value);
  }
  w.histogram("tempokv_ttr_error_seconds",
              "Staging finished this much later than the TTR projected at commit",
              histograms_->ttr_error);
  w.histogram("tempokv_ttu_error_seconds",
              "Retrieval was requested this much later than the use time projected at commit",
              histograms_->ttu_error);
  w.histogram("tempokv_lateness_seconds",
              "Staging finished this much later than the retrieval request (committed claims)",
              histograms_->lateness);
  return w.take();
}

}  // namespace tempokv::service
