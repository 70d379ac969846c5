// Controller: commit attempts, the ordinary path, provider callbacks and the runtime-facing
// retrieval calls (request, begin/end transfer, cancel), and the read-only views.
#include "controller/controller.h"

namespace tempokv {

bool Controller::try_commit(Rec& r, std::optional<Duration> known_ttr) {
  if (r.info.ordinary_only) return false;  // larger than the budget: only the ordinary path
  if (r.prefetch_failure) {  // its first stage's fetch failed: the engine recomputes
    finish(r, *r.prefetch_failure);
    return true;
  }
  if (refusal_stands(r)) {  // its share's bound exceeds the room: it would be refused again
    ++stats_.refused_attempts;
    return false;
  }
  if (options_.remote_prefetch && policy_->timed() && !r.requested) {
    // The first stage (ControllerOptions::remote_prefetch): a pass after it finds the claim's
    // TTR without the fetch's wait, and commits it by that laxity.
    Result<uint32_t> started = provider_.prefetch(r.claim);
    if (!started.is_ok()) {
      finish(r, started.status());
      return true;
    }
    if (*started > 0) {
      ++stats_.prefetches;
      r.attempted_in = 0;  // walked again in the next pass, with its new TTR
      return true;
    }
    // The second stage waits for the fetch to land: its read cannot start before, so a commit
    // now would hold room for nothing (the provider's fetch listener reevaluates when one lands).
    if (provider_.awaits_fetch(r.claim)) {
      if (!r.awaited_fetch) ++stats_.fetch_waits;
      r.awaited_fetch = true;
      return false;
    }
  }
  std::weak_ptr<int> alive = alive_;
  Duration ttr = known_ttr.value_or(Duration::zero());
  auto result = provider_.commit(
      r.claim,
      [this, alive](ClaimId id, Status st) {
        if (!alive.expired()) on_provider_ready(id, std::move(st));
      },
      known_ttr ? nullptr : &ttr, StagingProvider::RefusalText::kCodeOnly);
  if (!result.is_ok()) {
    if (result.status().code() == StatusCode::kResourceExhausted) {
      ++stats_.refused_attempts;
      if (!r.info.refused) {
        ++stats_.refused_claims;
        ++refused_planned_;  // it is still planned: unindex() takes it back
      }
      r.info.refused = true;
      note_cost(r);
      return false;
    }
    // The claim cannot be staged at all (an object left the store): it ends here.
    finish(r, result.status());
    return true;
  }
  ++stats_.commits;
  r.info.ttr_at_commit = ttr;
  r.info.projected_use_at_commit = r.use_at;
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

Result<RetrievalAnswer> Controller::request_retrieval(ClaimId id, RetrievalCallback on_ready) {
  Rec* r = find(id);
  if (!r) return Status::not_found("request_retrieval: claim " + std::to_string(id) + " is not reported");
  if (r->requested) {
    return Status::failed_precondition("request_retrieval: claim " + std::to_string(id) +
                                       " already requested retrieval");
  }
  r->info.projected_use_before_request = use_projected_before(*r, executor_.now());
  r->requested = true;
  r->info.timeline.retrieval_requested = executor_.now();
  r->claim.use_at = executor_.now();  // needed now: its reads go first
  if (r->info.state == ClaimState::kPlanned) note_missed(*r);
  if (r->info.state == ClaimState::kStaging) (void)provider_.expedite(id, executor_.now());
  note_timing(*r);
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

bool Controller::copying(const Rec& r) {
  return r.info.state == ClaimState::kTransferring ||
         (r.info.state == ClaimState::kOrdinary && r.info.timeline.transfer_start &&
          !r.info.timeline.transfer_end);
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
  if (!copying(*r)) {
    return Status::failed_precondition("end_transfer: claim " + std::to_string(id) +
                                       " is not transferring");
  }
  TEMPOKV_RETURN_IF_ERROR(provider_.end_transfer(id));
  // A cancelled claim was already let go in the provider: ending the copy ends its protection.
  if (!r->info.cancelled) TEMPOKV_RETURN_IF_ERROR(provider_.release(id));
  r->info.timeline.transfer_end = executor_.now();
  if (!r->info.cancelled) ++stats_.released;
  transition(*r, ClaimState::kReleased);
  reevaluate();
  return Status::ok();
}

Status Controller::object_transferred(ClaimId id, const Key& key) {
  Rec* r = find(id);
  if (!r) {
    return Status::not_found("object_transferred: claim " + std::to_string(id) +
                             " is not reported");
  }
  if (!copying(*r)) {
    return Status::failed_precondition("object_transferred: claim " + std::to_string(id) +
                                       " is not transferring");
  }
  // A cancelled claim's protection ends with its transfer, all at once.
  if (!options_.progressive_release || r->info.cancelled) return Status::ok();
  TEMPOKV_RETURN_IF_ERROR(provider_.release_object(id, key));
  reevaluate();  // capacity was released
  return Status::ok();
}

Status Controller::cancel(ClaimId id) {
  Rec* r = find(id);
  if (!r) return Status::not_found("cancel: claim " + std::to_string(id) + " is not reported");
  if (r->info.state == ClaimState::kReleased || r->info.cancelled) {
    return Status::failed_precondition("cancel: claim " + std::to_string(id) + " is " +
                                       (r->info.cancelled ? "already cancelled" : "released"));
  }
  if (r->info.state != ClaimState::kPlanned) TEMPOKV_RETURN_IF_ERROR(provider_.cancel(id));
  ++stats_.cancelled;
  r->on_ready = nullptr;
  if (copying(*r)) {
    // A copy may still be reading its objects: they stay protected until end_transfer.
    r->info.cancelled = true;
    return Status::ok();
  }
  transition(*r, ClaimState::kReleased);
  reevaluate();
  return Status::ok();
}

void Controller::note_timing(Rec& r) {
  const ClaimInfo& i = r.info;
  const ClaimTimeline& t = i.timeline;
  if (r.missed_by && !r.feedback_noted && options_.error_feedback && t.retrieval_requested &&
      (t.ready || t.released)) {
    // Committed at its use (or sent down the ordinary path), it was late by its read.
    r.feedback_noted = true;
    record_error(*r.missed_by, (t.ready ? *t.ready : *t.released) - *t.retrieval_requested);
    return;
  }
  if (r.feedback_noted || !options_.error_feedback || !t.committed || !t.ready ||
      !t.retrieval_requested || !i.projected_use_at_commit || !i.ttr_at_commit) {
    return;
  }
  // Judged where the rule made it eligible: its commit, or the start of its wait.
  const Rec::WaitStart from =
      r.waited.value_or(Rec::WaitStart{*t.committed, *i.ttr_at_commit, *i.projected_use_at_commit});
  if (from.at >= *t.retrieval_requested) return;
  r.feedback_noted = true;
  const Duration ttr_error = (*t.ready - from.at) - from.ttr;
  const Duration ttu_error = *t.retrieval_requested - from.use_at;
  record_error(ttr_error - ttu_error, Duration::max());
}

void Controller::record_error(Duration error, Duration read) {
  const Duration before = feedback_.margin();
  feedback_.record(error, read);
  if (feedback_.margin() == before) return;
  // Every timed claim's laxity moved: decide again at this instant, whatever the caller was doing
  // (a retrieval request, a transition), once it is done. Without this the next commit waited for
  // whichever evaluation came next, which depended on the walk's wake-ups (the index's bounds and
  // the full scan's exact laxities differ there).
  post_reevaluation();
}

void Controller::note_missed(Rec& r) {
  if (!options_.error_feedback || !policy_->timed() || !r.estimated || r.info.ordinary_only ||
      r.info.refused) {
    return;  // no projection to judge, or held back by the budget rather than by its estimate
  }
  // A claim waiting for the reads ahead of it was eligible in time: judged as committed then.
  if (r.waited) return;
  if (r.awaited_fetch) return;  // eligible in time too: held back by its remote fetch
  const Duration early_use = r.use_at - executor_.now();
  if (early_use > Duration::zero()) r.missed_by = early_use;  // recorded once ready
}

Result<Duration> Controller::ready_in(ClaimId id) const {
  auto it = claims_.find(id);
  if (it == claims_.end()) {
    return Status::not_found("ready_in: claim " + std::to_string(id) + " is not reported");
  }
  const Rec& r = it->second;
  switch (r.info.state) {
    case ClaimState::kPlanned:
    case ClaimState::kStaging: return provider_.ttr(r.claim);
    default: return Duration::zero();
  }
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
