#include "controller/controller.h"

#include <cstdio>
#include <cstdlib>
#include <unordered_set>

#include "common/units.h"

namespace tempokv {

Status ControllerOptions::validate() const {
  if (tick <= Duration::zero()) {
    return Status::invalid_argument("ControllerOptions.tick must be positive");
  }
  return Status::ok();
}

Controller::Controller(Executor& executor, StagingProvider& provider,
                       std::unique_ptr<CommitPolicy> policy, ControllerOptions options)
    : executor_(executor), provider_(provider), policy_(std::move(policy)), options_(options) {
  account();
  // Protection also ends inside the provider (a cancelled claim's last read landing): follow
  // every change of the sum, not only the controller's own calls.
  provider_.tier().set_budget_listener([this](uint64_t bytes) {
    meter_.set(executor_.now(), bytes);
  });
}

Controller::~Controller() {
  provider_.tier().set_budget_listener(nullptr);
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
  if (r.info.state == ClaimState::kPlanned) --planned_;
  r.info.state = to;
  TimePoint now = executor_.now();
  ClaimTimeline& tl = r.info.timeline;
  switch (to) {
    case ClaimState::kStaging: tl.committed = now; break;
    case ClaimState::kStageReady:
      if (!tl.committed) tl.committed = now;
      tl.ready = now;
      break;
    case ClaimState::kTransferring: tl.transfer_start = now; break;
    case ClaimState::kReleased: tl.released = now; break;
    default: break;
  }
}

void Controller::account() {
  FastTierStats s = provider_.tier().stats();
  meter_.set(executor_.now(), s.protected_bytes + s.reserved_bytes);
}

Status Controller::report(ClaimId id, std::vector<ManifestEntry> manifest, Duration ttu) {
  if (claims_.count(id)) {
    return Status::failed_precondition("claim " + std::to_string(id) + " is already reported");
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
  uint64_t budget = provider_.tier().stats().budget_bytes;
  if (footprint > budget) {
    return Status::invalid_argument("claim " + std::to_string(id) + " needs " +
                                    format_bytes(footprint) + ", more than the protected budget " +
                                    format_bytes(budget));
  }
  Rec& r = claims_[id];
  r.claim = StagingClaim{id, std::move(manifest)};
  r.info.id = id;
  r.info.footprint_bytes = footprint;
  r.info.timeline.reported = executor_.now();
  r.ttu = ttu;
  r.ttu_at = executor_.now();
  ++planned_;
  ++stats_.reported;
  report_order_.push_back(id);
  reevaluate();
  return Status::ok();
}

Status Controller::update(std::span<const std::pair<ClaimId, Duration>> ttus,
                          std::span<const ClaimId> waiting_order) {
  TimePoint now = executor_.now();
  for (const auto& [id, ttu] : ttus) {
    Rec* r = find(id);
    if (!r) return Status::not_found("update: claim " + std::to_string(id) + " is not reported");
    r->ttu = ttu;
    r->ttu_at = now;
  }
  for (ClaimId id : order_) {
    if (Rec* r = find(id)) r->rank = UINT32_MAX;
  }
  order_.assign(waiting_order.begin(), waiting_order.end());
  uint32_t rank = 0;
  for (ClaimId id : order_) {
    if (Rec* r = find(id)) r->rank = rank;
    ++rank;
  }
  reevaluate();
  return Status::ok();
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

void Controller::evaluate_once() {
  ++stats_.evaluations;
  // Claims whose retrieval is requested come first and never wait: commit or go ordinary.
  while (!requested_.empty()) {
    ClaimId id = requested_.front();
    requested_.pop_front();
    Rec* r = find(id);
    if (r && r->info.state == ClaimState::kPlanned && !try_commit(*r)) start_ordinary(*r);
  }
  if (planned_ == 0) return;
  TimePoint now = executor_.now();
  auto consider = [&](ClaimId id) {
    Rec* r = find(id);
    if (!r || r->info.state != ClaimState::kPlanned) return;
    Duration aged = r->ttu - (now - r->ttu_at);
    std::function<Duration()> ttr = [&] {
      ++stats_.ttr_queries;
      return provider_.ttr(r->claim);
    };
    std::function<Duration()> static_ttr = [&] { return provider_.static_ttr(r->claim); };
    EligibilityInput in{aged, r->rank, ttr, static_ttr};
    if (!policy_->timed()) {
      if (policy_->eligible(in)) try_commit(*r);
      return;
    }
    Duration lax = policy_->laxity(in);
    if (lax > Duration::zero() || !try_commit(*r)) {
      // Not yet (or refused): wake when its laxity would reach zero, if before the next tick.
      if (lax > Duration::zero() && (!next_wake_ || now + lax < *next_wake_)) next_wake_ = now + lax;
    }
  };
  next_wake_.reset();
  for (size_t i = 0; i < order_.size() && planned_ > 0; ++i) consider(order_[i]);
  // Claims the runtime has not placed in its order yet, in report order.
  std::erase_if(report_order_, [&](ClaimId id) {
    Rec* r = find(id);
    return !r || r->info.state != ClaimState::kPlanned;
  });
  for (size_t i = 0; i < report_order_.size() && planned_ > 0; ++i) {
    Rec* r = find(report_order_[i]);
    if (r && r->rank == UINT32_MAX) consider(report_order_[i]);
  }
  refused_planned_ = false;
  for (ClaimId id : report_order_) {
    Rec* r = find(id);
    if (r && r->info.state == ClaimState::kPlanned && r->info.refused) refused_planned_ = true;
  }
}

bool Controller::try_commit(Rec& r) {
  std::weak_ptr<int> alive = alive_;
  auto result = provider_.commit(r.claim, [this, alive](ClaimId id, Status st) {
    if (!alive.expired()) on_provider_ready(id, std::move(st));
  });
  if (!result.is_ok()) {
    if (result.status().code() == StatusCode::kResourceExhausted) {
      ++stats_.refused_attempts;
      if (!r.info.refused) ++stats_.refused_claims;
      r.info.refused = true;
      return false;
    }
    // The claim cannot be staged at all (an object left the store): it ends here.
    finish(r, result.status());
    return true;
  }
  ++stats_.commits;
  transition(r, *result == CommitState::kStageReady ? ClaimState::kStageReady
                                                     : ClaimState::kStaging);
  if (r.info.state == ClaimState::kStageReady && r.on_ready) {
    auto cb = std::move(r.on_ready);
    cb(r.info.id, RetrievalPath::kStaged);
  }
  return true;
}

void Controller::start_ordinary(Rec& r) {
  std::weak_ptr<int> alive = alive_;
  auto result = provider_.start_ordinary(r.claim, [this, alive](ClaimId id, Status st) {
    if (!alive.expired()) on_provider_ready(id, std::move(st));
  });
  if (!result.is_ok()) {
    finish(r, result.status());
    return;
  }
  ++stats_.ordinary;
  r.info.ordinary = true;
  transition(r, ClaimState::kOrdinary);
  if (*result == ClaimPhase::kOrdinaryReady && r.on_ready) {
    auto cb = std::move(r.on_ready);
    cb(r.info.id, RetrievalPath::kOrdinary);
  }
}

void Controller::on_provider_ready(ClaimId id, Status status) {
  Rec* r = find(id);
  if (!r || r->info.state == ClaimState::kReleased) return;
  if (!status.is_ok()) {
    // The provider already let go of what the claim held.
    ++stats_.failed;
    r->info.failure = status;
    transition(*r, ClaimState::kReleased);
    if (r->on_ready) {
      auto cb = std::move(r->on_ready);
      cb(id, status);
    }
  } else if (r->info.state == ClaimState::kStaging) {
    transition(*r, ClaimState::kStageReady);
    if (r->on_ready) {
      auto cb = std::move(r->on_ready);
      cb(id, RetrievalPath::kStaged);
    }
  } else if (r->info.state == ClaimState::kOrdinary && r->on_ready) {
    r->info.timeline.ready = executor_.now();
    auto cb = std::move(r->on_ready);
    cb(id, RetrievalPath::kOrdinary);
  }
  reevaluate();
}

void Controller::finish(Rec& r, const Status& failure) {
  if (!failure.is_ok()) {
    ++stats_.failed;
    r.info.failure = failure;
  }
  transition(r, ClaimState::kReleased);
  if (r.on_ready && !failure.is_ok()) {
    auto cb = std::move(r.on_ready);
    cb(r.info.id, failure);
  }
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
  if (tick_armed_ || planned_ == 0 || !(policy_->timed() || refused_planned_)) return;
  tick_armed_ = true;
  tick_ = executor_.after(options_.tick, [this] {
    tick_armed_ = false;
    ++stats_.ticks;
    reevaluate();
  });
}

}  // namespace tempokv

namespace tempokv {

Result<RetrievalAnswer> Controller::request_retrieval(ClaimId id, RetrievalCallback on_ready) {
  Rec* r = find(id);
  if (!r) return Status::not_found("request_retrieval: claim " + std::to_string(id) + " is not reported");
  if (r->requested) {
    return Status::failed_precondition("request_retrieval: claim " + std::to_string(id) +
                                       " already requested retrieval");
  }
  r->requested = true;
  r->info.timeline.retrieval_requested = executor_.now();
  switch (r->info.state) {
    case ClaimState::kPlanned: {
      if (!try_commit(*r)) start_ordinary(*r);
      ClaimState st = r->info.state;
      Result<RetrievalAnswer> answer = RetrievalAnswer::kWait;
      if (st == ClaimState::kReleased) {
        answer = r->info.failure;
      } else if (st == ClaimState::kStageReady) {
        answer = RetrievalAnswer::kReady;
      } else if (st == ClaimState::kOrdinary &&
                 provider_.phase(id) == ClaimPhase::kOrdinaryReady) {
        r->info.timeline.ready = executor_.now();
        answer = RetrievalAnswer::kOrdinaryReady;
      } else {
        r->on_ready = std::move(on_ready);
      }
      reevaluate();
      return answer;
    }
    case ClaimState::kStaging: r->on_ready = std::move(on_ready); return RetrievalAnswer::kWait;
    case ClaimState::kStageReady: return RetrievalAnswer::kReady;
    case ClaimState::kReleased:
      if (!r->info.failure.is_ok()) return r->info.failure;
      [[fallthrough]];
    default:
      return Status::failed_precondition("request_retrieval: claim " + std::to_string(id) +
                                         " is " + std::string(claim_state_name(r->info.state)));
  }
}

Status Controller::begin_transfer(ClaimId id) {
  Rec* r = find(id);
  if (!r) return Status::not_found("begin_transfer: claim " + std::to_string(id) + " is not reported");
  bool ordinary_ready =
      r->info.state == ClaimState::kOrdinary && provider_.phase(id) == ClaimPhase::kOrdinaryReady;
  if (r->info.state != ClaimState::kStageReady && !ordinary_ready) {
    return Status::failed_precondition("begin_transfer: claim " + std::to_string(id) + " is " +
                                       std::string(claim_state_name(r->info.state)) +
                                       (r->info.state == ClaimState::kOrdinary
                                            ? " with reads outstanding" : ""));
  }
  TEMPOKV_RETURN_IF_ERROR(provider_.begin_transfer(id));
  if (ordinary_ready) r->info.timeline.transfer_start = executor_.now();
  else transition(*r, ClaimState::kTransferring);
  return Status::ok();
}

Status Controller::end_transfer(ClaimId id) {
  Rec* r = find(id);
  if (!r) return Status::not_found("end_transfer: claim " + std::to_string(id) + " is not reported");
  bool ordinary = r->info.state == ClaimState::kOrdinary && r->info.timeline.transfer_start;
  if (r->info.state != ClaimState::kTransferring && !ordinary) {
    return Status::failed_precondition("end_transfer: claim " + std::to_string(id) +
                                       " is not transferring");
  }
  TEMPOKV_RETURN_IF_ERROR(provider_.end_transfer(id));
  TEMPOKV_RETURN_IF_ERROR(provider_.release(id));
  r->info.timeline.transfer_end = executor_.now();
  ++stats_.released;
  transition(*r, ClaimState::kReleased);
  reevaluate();
  return Status::ok();
}

Status Controller::cancel(ClaimId id) {
  Rec* r = find(id);
  if (!r) return Status::not_found("cancel: claim " + std::to_string(id) + " is not reported");
  if (r->info.state == ClaimState::kReleased) {
    return Status::failed_precondition("cancel: claim " + std::to_string(id) + " is released");
  }
  if (r->info.state != ClaimState::kPlanned) TEMPOKV_RETURN_IF_ERROR(provider_.cancel(id));
  ++stats_.cancelled;
  r->on_ready = nullptr;
  transition(*r, ClaimState::kReleased);
  reevaluate();
  return Status::ok();
}

Result<ClaimInfo> Controller::info(ClaimId id) const {
  auto it = claims_.find(id);
  if (it == claims_.end()) return Status::not_found("claim " + std::to_string(id) + " is not reported");
  return it->second.info;
}

std::vector<ClaimInfo> Controller::claims() const {
  std::vector<ClaimInfo> out;
  out.reserve(claims_.size());
  for (const auto& [id, r] : claims_) out.push_back(r.info);
  return out;
}

ControllerStats Controller::stats() const {
  ControllerStats s = stats_;
  ByteTimeMeter m = meter_;
  FastTierStats t = provider_.tier().stats();
  m.set(executor_.now(), t.protected_bytes + t.reserved_bytes);
  s.protected_gib_s = m.gib_seconds();
  return s;
}

void Controller::forget_released() {
  std::erase_if(claims_, [](const auto& kv) { return kv.second.info.state == ClaimState::kReleased; });
}

}  // namespace tempokv
