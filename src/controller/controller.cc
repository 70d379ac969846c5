#include "controller/controller.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>

#include "common/units.h"

namespace tempokv {

Status ControllerOptions::validate() const {
  if (tick <= Duration::zero()) {
    return Status::invalid_argument("ControllerOptions.tick must be positive");
  }
  if (feedback.window == 0 || !(feedback.quantile >= 0 && feedback.quantile <= 1)) {
    return Status::invalid_argument(
        "ControllerOptions.feedback: window must be >= 1 and quantile in [0, 1]");
  }
  return Status::ok();
}

Controller::Controller(Executor& executor, StagingProvider& provider,
                       std::unique_ptr<CommitPolicy> policy, ControllerOptions options)
    : executor_(executor),
      provider_(provider),
      policy_(std::move(policy)),
      options_(options),
      feedback_(options.feedback) {
  account();
  // Protection also ends inside the provider (a cancelled claim's last read landing): follow
  // every change of the sum, not only the controller's own calls.
  provider_.tier().set_budget_listener([this](uint64_t bytes) {
    meter_.set(executor_.now(), bytes);
  });
  provider_.tier().set_eviction_listener([this](const Key& key) { on_evicted(key); });
  provider_.set_entry_listener([this](const Key& key, uint64_t budget_bytes,
                                      uint64_t occupied_bytes) {
    on_entry(key, budget_bytes, occupied_bytes);
  });
  // A fetch no committed claim waited for ended: the claims that awaited it (Rec::awaited_fetch)
  // may commit now.
  provider_.set_fetch_listener([this](const Key& key, ClaimId prefetcher, const Status& status) {
    if (!status.is_ok() && prefetcher != 0) note_prefetch_failure(key, prefetcher, status);
    post_reevaluation();
  });
}

void Controller::note_prefetch_failure(const Key& key, ClaimId id, const Status& status) {
  Rec* r = find(id);
  // The claim that started the fetch, still planned and still naming the object (an id reused
  // by a later claim on other objects is not it).
  if (r == nullptr || r->info.state != ClaimState::kPlanned ||
      std::none_of(r->claim.objects.begin(), r->claim.objects.end(),
                   [&](const ManifestEntry& e) { return e.key == key; })) {
    return;
  }
  r->prefetch_failure = Status(status.code(), "claim " + std::to_string(id) +
                                                  ": a remote fetch failed before its commit: " +
                                                  status.message());
}

void Controller::post_reevaluation() {
  if (reevaluation_posted_) return;  // once per instant, however many causes come
  reevaluation_posted_ = true;
  std::weak_ptr<int> alive = alive_;
  executor_.post([this, alive] {
    if (alive.expired()) return;
    reevaluation_posted_ = false;
    reevaluate();
  });
}

Controller::~Controller() {
  provider_.tier().set_budget_listener(nullptr);
  provider_.tier().set_eviction_listener(nullptr);
  provider_.set_entry_listener(nullptr);
  provider_.set_fetch_listener(nullptr);
  tick_.cancel();
  wake_.cancel();
}

Controller::Rec* Controller::find(ClaimId id) {
  auto it = claims_.find(id);
  return it == claims_.end() ? nullptr : &it->second;
}

void Controller::transition(Rec& r, ClaimState to) {
  if (!transition_allowed(r.info.state, to)) {
    std::fprintf(stderr, "tempokv: controller bug: claim %llu: illegal transition %s -> %s\n",
                 static_cast<unsigned long long>(r.info.id),
                 std::string(claim_state_name(r.info.state)).c_str(),
                 std::string(claim_state_name(to)).c_str());
    std::abort();
  }
  if (r.info.state == ClaimState::kPlanned) unindex(r);
  r.info.state = to;
  TimePoint now = executor_.now();
  ClaimTimeline& tl = r.info.timeline;
  switch (to) {
    case ClaimState::kStaging: tl.committed = now; break;
    case ClaimState::kStageReady:
      if (!tl.committed) tl.committed = now;
      tl.ready = now;
      note_timing(r);
      break;
    case ClaimState::kTransferring: tl.transfer_start = now; break;
    case ClaimState::kReleased:
      tl.released = now;
      note_timing(r);
      break;
    default: break;
  }
}

void Controller::unindex(Rec& r) {
  --planned_;
  if (r.info.refused) --refused_planned_;
  if (r.rank == kUnranked) unranked_.erase(r.seq);
  if (r.indexed) index_of(r).erase({r.index_at, r.info.id});
  r.indexed = false;
  r.resting = false;
  unhold(r);
  unpark(r);
  planned_footprints_.erase(planned_footprints_.find(r.info.footprint_bytes));
}

namespace {

// An index key (by_use_'s and the other use indexes', parked_by_use_'s) may lag the use time by
// up to an eighth of the key's distance from now, or kKeyLag, never exceed it: a queue whose
// projection drifts a little at every update then costs no index change per claim, and the
// window walk (and the chain's gather) still finds every claim used inside the window. kKeyLag
// keeps the claims used within a few ms (a batch due at the next iteration boundary, projected
// a little later at every step) from being re-keyed at every update; a claim there is walked at
// every pass either way. A use that moved earlier than its key is keyed a 64th of its distance
// early, so that a projection that keeps moving a little earlier (an iteration's jitter moves
// every use of the queue) keeps its new key too.
constexpr Duration kKeyLag = std::chrono::milliseconds(1);

bool key_holds(TimePoint key, TimePoint use, TimePoint now) {
  return use >= key && use - key <= std::max(kKeyLag, key > now ? (key - now) / 8 : Duration(0));
}

TimePoint new_key(TimePoint key, TimePoint use, TimePoint now) {
  return use < key && use > now ? use - (use - now) / 64 : use;
}

}  // namespace

void Controller::set_ttu(Rec& r, Duration ttu, TimePoint now) {
  const TimePoint use = now + ttu;
  r.ttu = ttu;
  r.ttu_at = now;
  const bool placed = r.indexed || r.parked;
  if (use == r.use_at && placed == (r.info.state == ClaimState::kPlanned)) return;
  r.use_at = use;
  if (r.info.state != ClaimState::kPlanned) return;
  if (!r.requested) r.claim.use_at = use;  // its reads, if committed, go in use order
  if (r.parked) {  // indexed at its use time when unparked; by use among the parked meanwhile
    if (key_holds(r.park_use_at, use, now)) return;  // as by_use_'s key, below
    parked_by_use_.erase({r.park_use_at, r.info.id});
    r.park_use_at = new_key(r.park_use_at, use, now);
    parked_by_use_.emplace(r.park_use_at, r.info.id);
    return;
  }
  if (r.indexed && key_holds(r.index_at, use, now)) return;
  if (r.indexed) index_of(r).erase({r.index_at, r.info.id});
  r.index_at = r.indexed ? new_key(r.index_at, use, now) : use;
  r.indexed = true;
  index_of(r).emplace(r.index_at, r.info.id);
}

void Controller::keep_prior_use(Rec& r, TimePoint now) {
  if (r.estimated && r.ttu_at < now) r.prior_use_at = r.use_at;
}

std::optional<TimePoint> Controller::use_projected_before(const Rec& r, TimePoint now) {
  if (!r.estimated) return std::nullopt;
  if (r.ttu_at < now) return r.use_at;
  return r.prior_use_at;
}

void Controller::account() {
  FastTierStats s = provider_.tier().stats();
  meter_.set(executor_.now(), s.protected_bytes + s.reserved_bytes);
}

Status Controller::report(ClaimId id, std::vector<ManifestEntry> manifest, Duration ttu) {
  if (Rec* old = find(id)) {
    // A released claim's id may be reused once the provider has let go of it.
    if (old->info.state != ClaimState::kReleased) {
      return Status::failed_precondition("claim " + std::to_string(id) + " is already reported");
    }
    if (provider_.phase(id)) {
      return Status::failed_precondition("claim " + std::to_string(id) +
                                         " was released but its reads are still in flight");
    }
    claims_.erase(id);
    ++claims_erased_;
  }
  if (manifest.empty()) {
    return Status::invalid_argument("claim " + std::to_string(id) + " has an empty manifest");
  }
  uint64_t footprint = 0;
  std::unordered_set<Key> seen;
  for (const ManifestEntry& e : manifest) {
    if (e.bytes == 0) {
      return Status::invalid_argument("claim " + std::to_string(id) + ": object " +
                                      e.key.to_string() + " has zero bytes");
    }
    if (seen.insert(e.key).second) {
      footprint += provider_.tier().charge_bytes(round_up(e.bytes, kBlockBytes));
    }
  }
  const FastTierStats tier = provider_.tier().stats();
  if (footprint > tier.capacity_bytes) {
    return Status::invalid_argument("claim " + std::to_string(id) + " needs " +
                                    format_bytes(footprint) + ", more than the fast tier " +
                                    format_bytes(tier.capacity_bytes));
  }
  Rec& r = claims_[id];
  r.claim = StagingClaim{id, std::move(manifest)};
  r.info.id = id;
  r.info.footprint_bytes = footprint;
  r.info.ordinary_only = footprint > tier.budget_bytes;
  r.info.timeline.reported = executor_.now();
  r.seq = next_seq_++;
  set_ttu(r, ttu, executor_.now());
  ++planned_;
  ++stats_.reported;
  unranked_.emplace(r.seq, id);
  planned_footprints_.insert(footprint);
  reevaluate();
  return Status::ok();
}

size_t Controller::committable_prefix(std::span<const ManifestEntry> manifest) const {
  const uint64_t budget = provider_.tier().stats().budget_bytes;
  uint64_t footprint = 0;
  std::unordered_set<Key> seen;
  for (size_t i = 0; i < manifest.size(); ++i) {
    if (seen.insert(manifest[i].key).second) {
      footprint += provider_.tier().charge_bytes(round_up(manifest[i].bytes, kBlockBytes));
    }
    if (footprint > budget) return i;
  }
  return manifest.size();
}

Status Controller::update(std::span<const std::pair<ClaimId, Duration>> ttus,
                          std::span<const ClaimId> waiting_order, uint32_t runtime,
                          std::span<const uint8_t> lower_bound) {
  if (!lower_bound.empty() && lower_bound.size() != ttus.size()) {
    return Status::invalid_argument("update: " + std::to_string(lower_bound.size()) +
                                    " lower-bound flags for " + std::to_string(ttus.size()) +
                                    " estimates");
  }
  const bool same_claims =
      update_erased_ == claims_erased_ &&
      std::equal(ttus.begin(), ttus.end(), update_ids_.begin(), update_ids_.end(),
                 [](const auto& u, ClaimId id) { return u.first == id; });
  if (!same_claims) {
    update_erased_ = UINT64_MAX;  // until every claim is found
    scratch_recs_.clear();
    update_ids_.clear();
    for (const auto& [id, ttu] : ttus) {
      Rec* r = find(id);
      if (!r) return Status::not_found("update: claim " + std::to_string(id) + " is not reported");
      scratch_recs_.push_back(r);
      update_ids_.push_back(id);
    }
    update_erased_ = claims_erased_;
  }
  TimePoint now = executor_.now();
  for (size_t i = 0; i < ttus.size(); ++i) {
    Rec& r = *scratch_recs_[i];
    keep_prior_use(r, now);
    set_ttu(r, ttus[i].second, now);
    r.estimated = true;
    r.ttu_bound = !lower_bound.empty() && lower_bound[i] != 0;
  }
  set_order(runtime, waiting_order);
  reevaluate();
  return Status::ok();
}

Status Controller::update_estimates(std::span<const std::pair<ClaimId, Duration>> ttus) {
  for (const auto& [id, ttu] : ttus) {
    if (!find(id)) {
      return Status::not_found("update_estimates: claim " + std::to_string(id) +
                               " is not reported");
    }
  }
  TimePoint now = executor_.now();
  for (const auto& [id, ttu] : ttus) {
    Rec& r = *find(id);
    keep_prior_use(r, now);
    set_ttu(r, ttu, now);
    r.estimated = true;
    r.ttu_bound = false;
  }
  reevaluate();
  return Status::ok();
}

void Controller::set_order(uint32_t runtime, std::span<const ClaimId> waiting_order) {
  // Only rank changes between ranked and unranked touch unranked_, so a queue that merely moves up
  // costs a hash lookup per claim.
  std::vector<ClaimId>& order = orders_[runtime];
  // The same order as last time (a queue that did not move) with no claim reported since: every
  // rank stands.
  uint64_t& reported_then = order_reported_[runtime];
  if (reported_then == next_seq_ &&
      std::equal(order.begin(), order.end(), waiting_order.begin(), waiting_order.end())) {
    return;
  }
  reported_then = next_seq_;
  const uint64_t gen = ++order_gen_;
  for (ClaimId id : order) {
    Rec* r = find(id);
    if (r && r->runtime == runtime && r->rank != kUnranked) {
      r->rank = kUnranked;
      r->cleared_gen = gen;
    }
  }
  for (size_t i = 0; i < waiting_order.size(); ++i) {
    Rec* r = find(waiting_order[i]);
    if (!r) continue;
    if (r->rank == kUnranked && r->cleared_gen != gen && r->info.state == ClaimState::kPlanned) {
      unranked_.erase(r->seq);
    }
    r->rank = static_cast<uint32_t>(i);
    r->runtime = runtime;
  }
  for (ClaimId id : order) {
    Rec* r = find(id);
    if (r && r->cleared_gen == gen && r->rank == kUnranked &&
        r->info.state == ClaimState::kPlanned) {
      unranked_.emplace(r->seq, id);
    }
  }
  order.assign(waiting_order.begin(), waiting_order.end());
}

void Controller::reevaluate() {
  if (evaluating_) {
    again_ = true;
    return;
  }
  evaluating_ = true;
  do {
    again_ = false;
    evaluate_once();
  } while (again_);
  evaluating_ = false;
  account();
  schedule_wake();
  schedule_tick();
}

void Controller::schedule_wake() {
  // A precise wake-up where the laxity of a planned claim is projected to reach zero, so timed
  // commits are not late by up to a tick. Replaced by each evaluation.
  wake_.cancel();
  if (!next_wake_ || planned_ == 0) return;
  wake_ = executor_.at(*next_wake_, [this] {
    next_wake_.reset();
    reevaluate();
  });
}

void Controller::schedule_tick() {
  // Aging TTUs change timed eligibility with nothing else happening; a refused claim may fit once
  // draining protection ends inside the provider. Otherwise every change arrives as an event.
  if (tick_armed_ || planned_ == 0 || !(policy_->timed() || refused_planned_ > 0)) return;
  tick_armed_ = true;
  tick_at_ = executor_.now() + options_.tick;
  tick_ = executor_.at(tick_at_, [this] {
    tick_armed_ = false;
    ++stats_.ticks;
    reevaluate();
  });
}

Result<std::unique_ptr<Controller>> make_controller(Executor& executor, StagingProvider& provider,
                                                    std::string_view configuration,
                                                    ControllerOptions options) {
  const TempoKvConfiguration* tempokv = find_tempokv_configuration(configuration);
  if (!tempokv) {
    TEMPOKV_ASSIGN_OR_RETURN(auto policy, make_commit_policy(configuration));
    options.progressive_release = false;
    return std::make_unique<Controller>(executor, provider, std::move(policy), options);
  }
  const TempoKvSwitches& s = tempokv->switches;
  options.progressive_release = s.progressive_release;
  options.error_feedback = options.error_feedback && s.error_feedback;
  options.wait_for_reads_ahead = options.wait_for_reads_ahead && s.commit_wait;
  options.chain_deadlines = options.chain_deadlines && s.chained_deadlines;
  return std::make_unique<Controller>(executor, provider, make_tempokv_policy(s.state_aware_ttr),
                                      options);
}

bool is_tempokv_variant(std::string_view configuration) {
  return configuration != "tempokv" && find_tempokv_configuration(configuration) != nullptr;
}

bool is_controller_configuration(std::string_view configuration) {
  return find_tempokv_configuration(configuration) || make_commit_policy(configuration).is_ok();
}

std::string controller_configuration_names() {
  std::string names = "demand, immediate, queue-K (K >= 1)";
  for (const TempoKvConfiguration& c : tempokv_configurations()) names += ", " + std::string(c.name);
  return names;
}

bool projects_order_statistics(std::string_view configuration) {
  const TempoKvConfiguration* c = find_tempokv_configuration(configuration);
  return c && c->switches.order_statistics;
}

IssueOrder issue_order_of(std::string_view configuration) {
  const TempoKvConfiguration* c = find_tempokv_configuration(configuration);
  return c && !c->switches.commit_order ? IssueOrder::kUse : IssueOrder::kCommit;
}

}  // namespace tempokv
