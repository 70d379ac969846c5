// ServiceCore: retrieval of claims shared by the sessions of a runtime (readiness, transfer
// brackets, progressive release, cancel) and where their objects are in the shared tier.
#include <algorithm>

#include "daemon/service_core.h"
#include "daemon/service_metrics.h"
#include "daemon/service_state.h"

namespace tempokv::service {

Status ServiceCore::claim_op(Session& s, uint64_t id, const Op& op) {
  Status st;
  if (const auto* m = std::get_if<RequestRetrieval>(&op)) return retrieval(s, id, m->request_id);
  if (const auto* b = std::get_if<BeginTransfer>(&op)) {
    st = begin_transfer(s, b->request_id);
  } else if (const auto* e = std::get_if<EndTransfer>(&op)) {
    st = end_transfer(s, e->request_id);
  } else if (const auto* o = std::get_if<ObjectTransferred>(&op)) {
    st = object_transferred(s, o->request_id, o->key);
  } else if (const auto* c = std::get_if<Cancel>(&op)) {
    st = cancel(s, c->request_id);
  } else {
    return Status::internal("op " + std::string(op_name(op)) + " reached the claim handler");
  }
  if (st.is_ok()) send_(s.id, encode_reply(id));
  return st;
}

Result<std::vector<TierSpan>> ServiceCore::spans(ClaimShare& share) const {
  std::vector<TierSpan> out;
  out.reserve(share.manifest.size());
  const bool first = share.generations.empty();
  const uint64_t tier_bytes = tier_->options().capacity_bytes;
  for (size_t i = 0; i < share.manifest.size(); ++i) {
    const ManifestEntry& e = share.manifest[i];
    const FastObject* o = tier_->find(e.key);
    // Ready means resident and protected or held, of the generation the claim validated, with
    // the manifest's length checked against the store at commit. Anything else is a bug, and
    // the claim fails (the runtime recomputes) rather than pointing a client at other bytes.
    const bool whole = o && o->residency == Residency::kResident && e.bytes <= o->object_bytes &&
                       o->offset <= tier_bytes && e.bytes <= tier_bytes - o->offset;
    const bool same = whole && (first || o->generation == share.generations[i]);
    if (!same) {
      return Status::internal(
          "object " + e.key.to_string() + " of a ready claim is " +
          (!whole ? std::string("not whole in the fast tier")
                  : "generation " + std::to_string(o->generation) + " in the fast tier, not " +
                        std::to_string(share.generations[i])) +
          "; the claim fails instead of serving it");
    }
    out.push_back(TierSpan{o->offset, e.bytes, o->generation});
  }
  if (first) {
    for (const TierSpan& t : out) share.generations.push_back(t.generation);
  }
  return out;
}

Status ServiceCore::retrieval(Session& s, uint64_t id, uint64_t request_id) {
  TEMPOKV_RETURN_IF_ERROR(owned(s, request_id, "request_retrieval"));
  auto it = shares_.find(request_id);
  if (it == shares_.end()) {
    return Status::failed_precondition("request_retrieval: request " +
                                       std::to_string(request_id) + " has no reported hit");
  }
  ClaimShare& share = it->second;
  if (share.cancelled) {
    return Status::cancelled("request_retrieval: request " + std::to_string(request_id) +
                             " was cancelled");
  }
  if (share.participants.count(s.id)) {
    return Status::failed_precondition("request_retrieval: this session already requested "
                                       "request " + std::to_string(request_id));
  }
  if (!share.requested) {
    std::weak_ptr<int> alive = alive_;
    Result<RetrievalAnswer> result = s.runtime->adapter->request_retrieval(
        request_id, [this, alive](ClaimId cid, Result<RetrievalPath> outcome) {
          if (!alive.expired()) on_ready(cid, std::move(outcome));
        });
    if (!result.is_ok()) {
      // The claim failed at once (an object left the store): it is released, and so is its
      // share, so the request id is free again after finished or cancel.
      record_claim_end(request_id);
      end_share(request_id);
      return result.status();
    }
    const RetrievalAnswer answer = *result;
    share.requested = true;
    if (answer == RetrievalAnswer::kReady) share.ready = RetrievalPath::kStaged;
    if (answer == RetrievalAnswer::kOrdinaryReady) share.ready = RetrievalPath::kOrdinary;
  }
  share.participants[s.id] = false;
  if (!share.ready) {
    share.waiting.insert(s.id);
    send_(s.id, encode_retrieval_reply(id, RetrievalAnswer::kWait));
    return Status::ok();
  }
  const RetrievalAnswer answer = *share.ready == RetrievalPath::kStaged
                                     ? RetrievalAnswer::kReady
                                     : RetrievalAnswer::kOrdinaryReady;
  Result<std::vector<TierSpan>> where = spans(share);
  if (!where.is_ok()) {
    share.participants.erase(s.id);
    fail_share(request_id, where.status());
    return where.status();
  }
  send_(s.id, encode_retrieval_reply(id, answer, *where));
  return Status::ok();
}

void ServiceCore::fail_share(uint64_t request_id, const Status& why) {
  auto it = shares_.find(request_id);
  if (it == shares_.end()) return;
  Runtime& rt = *it->second.runtime;
  ++counters_.errors;
  // As a cancel by the daemon: the claim and the request end, and every session that asked or
  // copies is told why (a load error: the runtime recomputes).
  (void)rt.adapter->cancel(request_id);
  request_ended(rt, request_id);
  abandon_share(request_id, 0, why);
  if (!shares_.count(request_id)) owner_.erase(request_id);
}

void ServiceCore::on_ready(uint64_t request_id, Result<RetrievalPath> outcome) {
  auto it = shares_.find(request_id);
  if (it == shares_.end()) return;
  ClaimShare& share = it->second;
  if (outcome.is_ok()) {
    Result<std::vector<TierSpan>> where = spans(share);
    if (!where.is_ok()) return fail_share(request_id, where.status());
    share.ready = *outcome;
    const uint64_t rid = request_id ^ share.runtime->id_salt;  // the runtime's own id
    for (uint64_t session : share.waiting) send_(session, encode_ready(rid, outcome, *where));
    share.waiting.clear();
    return;
  }
  // The claim failed and is released: every session that asked is told why.
  const uint64_t rid = request_id ^ share.runtime->id_salt;
  const Result<RetrievalPath> told = to_runtime_ids(outcome.status(), Cancel{request_id},
                                                    share.runtime->id_salt);
  for (uint64_t session : share.waiting) send_(session, encode_ready(rid, told));
  record_claim_end(request_id);
  end_share(request_id);
}

Status ServiceCore::begin_transfer(Session& s, uint64_t request_id) {
  TEMPOKV_RETURN_IF_ERROR(owned(s, request_id, "begin_transfer"));
  auto it = shares_.find(request_id);
  const std::string what = "begin_transfer: request " + std::to_string(request_id);
  if (it == shares_.end() || !it->second.participants.count(s.id)) {
    return Status::failed_precondition(what + ": this session did not request its retrieval");
  }
  ClaimShare& share = it->second;
  if (share.cancelled) return Status::cancelled(what + " was cancelled");
  if (!share.ready) return Status::failed_precondition(what + " is not ready yet");
  if (share.copying.count(s.id) || share.participants[s.id]) {
    return Status::failed_precondition(what + ": this session's transfer already began");
  }
  if (!share.in_transfer) {
    TEMPOKV_RETURN_IF_ERROR(s.runtime->adapter->begin_transfer(request_id));
    share.in_transfer = true;
  }
  share.copying.insert(s.id);
  if (!s.copier) {
    s.copier = true;
    ++s.runtime->copiers_seen;
  }
  return Status::ok();
}

Status ServiceCore::end_transfer(Session& s, uint64_t request_id) {
  TEMPOKV_RETURN_IF_ERROR(owned(s, request_id, "end_transfer"));
  auto it = shares_.find(request_id);
  if (it == shares_.end() || !it->second.copying.count(s.id)) {
    return Status::failed_precondition("end_transfer: no transfer of request " +
                                       std::to_string(request_id) + " began in this session");
  }
  it->second.copying.erase(s.id);
  it->second.participants[s.id] = true;
  maybe_end_transfer(request_id);
  return Status::ok();
}

size_t ServiceCore::copies_needed(const Runtime& rt) const {
  // Live sessions that copy, plus declared ranks that have not shown themselves yet (a rank
  // that has not begun its first transfer is still coming); a session that never copies (a
  // scheduler) never counts, and a copier that left counts no more.
  size_t live = 0;
  for (uint64_t id : rt.sessions) live += sessions_.at(id)->copier ? 1 : 0;
  const size_t unseen = rt.ranks > rt.copiers_seen ? rt.ranks - rt.copiers_seen : 0;
  return std::max<size_t>(1, std::min<size_t>(rt.ranks, live + unseen));
}

bool ServiceCore::all_copied(const ClaimShare& share, const std::set<uint64_t>& done) const {
  // Nobody copying may still need it, and enough distinct sessions must have copied it: with
  // declared ranks, as many as copies_needed(); without, every session that asked.
  for (uint64_t session : share.copying)
    if (!done.count(session)) return false;
  if (share.runtime->ranks == 0) {
    for (const auto& [session, ended] : share.participants)
      if (!done.count(session)) return false;
    return !done.empty();
  }
  size_t live = 0;
  for (uint64_t session : done) live += share.runtime->sessions.count(session);
  return live >= copies_needed(*share.runtime);
}

void ServiceCore::maybe_end_transfer(uint64_t request_id) {
  auto it = shares_.find(request_id);
  if (it == shares_.end() || !it->second.in_transfer) return;
  ClaimShare& share = it->second;
  if (!share.copying.empty()) return;
  if (!share.cancelled) {
    std::set<uint64_t> ended;
    for (const auto& [session, done] : share.participants)
      if (done) ended.insert(session);
    if (!all_copied(share, ended)) return;
  }
  // Every copy it waited for is done (or its copier left): the transfer ends, and the claim is
  // released (a cancelled one was let go already; this ends its protection).
  (void)share.runtime->adapter->end_transfer(request_id);
  record_claim_end(request_id);
  end_share(request_id);
}

Status ServiceCore::object_transferred(Session& s, uint64_t request_id, const Key& key) {
  TEMPOKV_RETURN_IF_ERROR(owned(s, request_id, "object_transferred"));
  auto it = shares_.find(request_id);
  if (it == shares_.end() || !it->second.copying.count(s.id)) {
    return Status::failed_precondition("object_transferred: no transfer of request " +
                                       std::to_string(request_id) + " began in this session");
  }
  ClaimShare& share = it->second;
  if (share.cancelled || share.objects_released.count(key)) return Status::ok();
  std::set<uint64_t>& done = share.objects_done[key];
  done.insert(s.id);
  // The object's protection may end only when every session that will copy it has.
  if (!all_copied(share, done)) return Status::ok();
  share.objects_released.insert(key);
  return s.runtime->adapter->object_transferred(request_id, key);
}

Status ServiceCore::cancel(Session& s, uint64_t request_id) {
  TEMPOKV_RETURN_IF_ERROR(owned(s, request_id, "cancel"));
  auto it = shares_.find(request_id);
  if (it != shares_.end() && it->second.cancelled) {
    // Already cancelled by another session: this one's copy, if any, ends here.
    it->second.copying.erase(s.id);
    maybe_end_transfer(request_id);
    return Status::ok();
  }
  Status st = s.runtime->adapter->cancel(request_id);
  request_ended(*s.runtime, request_id);
  abandon_share(request_id, s.id,
                Status::cancelled("request " + std::to_string(request_id) +
                                  " was cancelled by session " + std::to_string(s.id)));
  if (!shares_.count(request_id)) owner_.erase(request_id);
  return st;
}

void ServiceCore::abandon_share(uint64_t request_id, uint64_t by_session, const Status& why) {
  auto it = shares_.find(request_id);
  if (it == shares_.end()) return;
  ClaimShare& share = it->second;
  const uint64_t rid = request_id ^ share.runtime->id_salt;  // the runtime's own id
  const Result<RetrievalPath> told =
      to_runtime_ids(why, Cancel{request_id}, share.runtime->id_salt);
  for (uint64_t session : share.waiting) send_(session, encode_ready(rid, told));
  share.waiting.clear();
  share.copying.erase(by_session);  // the session that cancels stops its own copy
  if (!share.in_transfer) {
    record_claim_end(request_id);
    end_share(request_id);
    return;
  }
  // Sessions still copying are told to stop; the bytes stay protected until each has ended its
  // transfer (or left), because they may still be reading them.
  share.cancelled = true;
  for (uint64_t session : share.copying) send_(session, encode_ready(rid, told));
  maybe_end_transfer(request_id);
}

void ServiceCore::end_share(uint64_t request_id) {
  auto it = shares_.find(request_id);
  if (it == shares_.end()) return;
  Runtime* rt = it->second.runtime;
  rt->manifest_entries -= it->second.manifest.size();
  shares_.erase(it);
  if (!rt->requests.count(request_id)) owner_.erase(request_id);
}

}  // namespace tempokv::service
