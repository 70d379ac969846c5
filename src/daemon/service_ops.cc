// ServiceCore: one request of an open session, op by op.
#include <algorithm>
#include <unordered_set>

#include "common/units.h"

#include "daemon/service_core.h"
#include "daemon/service_metrics.h"
#include "daemon/service_state.h"

namespace tempokv::service {

void ServiceCore::handle(uint64_t session, uint64_t id, const Op& op) {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) {
    send_(session, encode_error(id, Status::failed_precondition("no open session")));
    return;
  }
  ++counters_.requests;
  const uint64_t salt = it->second->runtime->id_salt;
  const Op internal = to_internal_ids(op, salt);
  Status st = shutting_down_ ? Status::unavailable("tempokvd is shutting down")
                             : run_op(*it->second, id, internal);
  // run_op sends its own successful replies (some of them later); errors are answered here.
  if (!st.is_ok()) {
    ++counters_.errors;
    // A step's edits name a few ids; its error may name one of the lists they edit.
    std::vector<uint64_t> lists;
    if (const auto* step = std::get_if<Step>(&internal); step != nullptr && step->base) {
      if (auto again = sessions_.find(session); again != sessions_.end()) {
        const StepLists& l = again->second->step_lists;
        lists.assign(l.decoders.begin(), l.decoders.end());
        lists.insert(lists.end(), l.waiting.begin(), l.waiting.end());
      }
    }
    send_(session, encode_error(id, to_runtime_ids(st, internal, salt, lists)));
  }
}

Status ServiceCore::owned(const Session& s, uint64_t request_id, const char* op) const {
  auto it = owner_.find(request_id);
  if (it == owner_.end() || it->second != s.runtime) {
    return Status::not_found(std::string(op) + ": request " + std::to_string(request_id) +
                             " is not known to this session's runtime");
  }
  return Status::ok();
}

Result<std::span<const uint64_t>> ServiceCore::live_order(const Session& s,
                                                          std::span<const uint64_t> waiting,
                                                          const char* op) const {
  Runtime& rt = *s.runtime;
  if (rt.order_checked.holds(waiting, rt.requests_changes)) {
    return std::span<const uint64_t>(rt.order_live);
  }
  rt.order_checked.forget();  // until every id is checked
  rt.order_live.clear();
  rt.order_live.reserve(waiting.size());
  for (uint64_t rid : waiting) {
    // One lookup for a live request: a runtime's requests are its own in owner_ until they end.
    if (!rt.requests.count(rid)) {
      if (rt.ended.count(rid)) continue;
      TEMPOKV_RETURN_IF_ERROR(owned(s, rid, op));
    }
    rt.order_live.push_back(rid);
  }
  rt.order_checked.checked(waiting, rt.requests_changes);
  return std::span<const uint64_t>(rt.order_live);
}

void ServiceCore::request_ended(Runtime& rt, uint64_t request_id) {
  constexpr size_t kEndedKept = 65536;  // as many as one order may list
  rt.requests.erase(request_id);
  ++rt.requests_changes;
  rt.stepping.erase(request_id);
  if (!rt.ended.insert(request_id).second) return;
  rt.ended_order.push_back(request_id);
  if (rt.ended_order.size() > kEndedKept) {
    rt.ended.erase(rt.ended_order.front());
    rt.ended_order.pop_front();
  }
}

Status ServiceCore::run_op(Session& s, uint64_t id, const Op& op) {
  RuntimeAdapter& a = *s.runtime->adapter;
  auto reply = [&](Status st) {
    if (st.is_ok()) send_(s.id, encode_reply(id));
    return st;
  };
  if (const auto* m = std::get_if<AddRequest>(&op)) {
    if (m->manifest.empty()) return reply(add_request(s, m->request));
    // Added with its hit or not at all: a refused report takes the request back.
    TEMPOKV_RETURN_IF_ERROR(add_request(s, m->request));
    const ReportHit hit{m->request.id, m->manifest};
    if (remote_report_hit(s, id, hit)) {  // refused (its error is sent)
      (void)finish_request(s, hit.request_id, 0);
      return Status::ok();
    }
    Status st = report_hit(s, hit);
    if (!st.is_ok()) (void)finish_request(s, hit.request_id, 0);
    return reply(st);
  }
  if (const auto* m = std::get_if<ReportHit>(&op)) {
    if (remote_report_hit(s, id, *m)) return Status::ok();  // objects fetched from the cluster
    return reply(report_hit(s, *m));
  }
  if (const auto* m = std::get_if<UpdateOrder>(&op)) {
    TEMPOKV_ASSIGN_OR_RETURN(std::span<const uint64_t> order,
                             live_order(s, m->waiting, "update_order"));
    return reply(a.update_order(order, Duration(m->boundary_in_ns)));
  }
  if (const auto* m = std::get_if<IterationStarted>(&op)) {
    for (uint64_t rid : m->prefills) TEMPOKV_RETURN_IF_ERROR(owned(s, rid, "iteration_started"));
    for (uint64_t rid : m->decoders) TEMPOKV_RETURN_IF_ERROR(owned(s, rid, "iteration_started"));
    return reply(a.iteration_started(m->prefills, m->decoders));
  }
  if (const auto* m = std::get_if<Admitted>(&op)) {
    TEMPOKV_RETURN_IF_ERROR(owned(s, m->request_id, "admitted"));
    return reply(a.admitted(m->request_id));
  }
  if (const auto* m = std::get_if<PrefillDone>(&op)) {
    TEMPOKV_RETURN_IF_ERROR(owned(s, m->request_id, "prefill_done"));
    return reply(a.prefill_done(m->request_id));
  }
  if (const auto* m = std::get_if<TokensGenerated>(&op)) {
    TEMPOKV_RETURN_IF_ERROR(owned(s, m->request_id, "tokens_generated"));
    return reply(a.tokens_generated(m->request_id, m->total_generated));
  }
  if (const auto* m = std::get_if<Finished>(&op)) {
    return reply(finish_request(s, m->request_id, m->output_tokens));
  }
  if (const auto* m = std::get_if<Step>(&op)) return step(s, *m);  // answered only on failure
  if (std::holds_alternative<Heartbeat>(op)) return reply(Status::ok());
  if (std::holds_alternative<GetStats>(op)) {
    send_(s.id, encode_stats_reply(id, stats()));
    return Status::ok();
  }
  if (const auto* m = std::get_if<Lookup>(&op)) {
    std::vector<uint64_t> bytes;
    bytes.reserve(m->keys.size());
    std::vector<ManifestEntry> stored;  // the leading keys that are stored
    for (const Key& k : m->keys) {
      std::optional<ObjectInfo> info = store_->lookup(k);
      bytes.push_back(info ? info->payload_bytes : 0);
      if (info && stored.size() + 1 == bytes.size()) stored.push_back({k, info->payload_bytes});
    }
    if (remote_lookup(s, id, m->keys, bytes)) return Status::ok();  // the cluster answers too
    send_(s.id, encode_lookup_reply(id, bytes, controller_->committable_prefix(stored)));
    return Status::ok();
  }
  if (const auto* m = std::get_if<ReserveWrite>(&op)) return reserve_write(s, id, m->bytes);
  if (const auto* m = std::get_if<AbortWrite>(&op)) {
    if (!drop_reservation(s, m->offset)) {
      return Status::invalid_argument("abort_write: offset " + std::to_string(m->offset) +
                                      " is not a write reservation of this session");
    }
    return reply(Status::ok());
  }
  if (const auto* m = std::get_if<Put>(&op)) return put(s, id, *m);
  return claim_op(s, id, op);
}


Status ServiceCore::add_request(Session& s, const RequestInfo& request) {
  if (owner_.count(request.id)) {
    return Status::failed_precondition("add_request: request id " + std::to_string(request.id) +
                                       " is in use in this runtime");
  }
  if (s.runtime->requests.size() >= options_.max_requests_per_runtime) {
    return Status::resource_exhausted(
        "add_request: the runtime's live-request quota (server.max_requests_per_runtime = " +
        std::to_string(options_.max_requests_per_runtime) +
        ") is used up by its sessions; finish or cancel requests first");
  }
  TEMPOKV_RETURN_IF_ERROR(s.runtime->adapter->add_request(request));
  owner_[request.id] = s.runtime;
  s.runtime->requests.insert(request.id);
  ++s.runtime->requests_changes;
  return Status::ok();
}

Status ServiceCore::report_hit(Session& s, const ReportHit& m) {
  TEMPOKV_RETURN_IF_ERROR(owned(s, m.request_id, "report_hit"));
  Runtime& rt = *s.runtime;
  const size_t n = m.manifest.size();
  if (n > options_.max_manifest_entries) {
    return Status::invalid_argument("report_hit: a manifest of " + std::to_string(n) +
                                    " objects exceeds server.max_manifest_entries (" +
                                    std::to_string(options_.max_manifest_entries) + ")");
  }
  if (rt.manifest_entries + n > options_.max_manifest_entries_per_runtime) {
    return Status::resource_exhausted(
        "report_hit: the runtime's live claims hold " + std::to_string(rt.manifest_entries) +
        " objects; " + std::to_string(n) +
        " more exceed server.max_manifest_entries_per_runtime (" +
        std::to_string(options_.max_manifest_entries_per_runtime) +
        "); finish or cancel requests first");
  }
  // A key listed twice names the same bytes twice: no runtime means it, and it would cost the
  // daemon memory and time for nothing.
  std::unordered_set<Key> keys;
  keys.reserve(n);
  for (const ManifestEntry& e : m.manifest) {
    if (!keys.insert(e.key).second) {
      return Status::invalid_argument("report_hit: object " + e.key.to_string() +
                                      " is listed twice in the manifest");
    }
  }
  TEMPOKV_RETURN_IF_ERROR(rt.adapter->report_hit(m.request_id, m.manifest));
  if (auto old = shares_.find(m.request_id); old != shares_.end()) {
    rt.manifest_entries -= old->second.manifest.size();
  }
  ClaimShare share;
  share.runtime = &rt;
  share.manifest = m.manifest;
  rt.manifest_entries += n;
  shares_[m.request_id] = std::move(share);
  return Status::ok();
}

Status ServiceCore::finish_request(Session& s, uint64_t request_id, uint32_t output_tokens) {
  TEMPOKV_RETURN_IF_ERROR(owned(s, request_id, "finished"));
  TEMPOKV_RETURN_IF_ERROR(s.runtime->adapter->finished(request_id, output_tokens));
  request_ended(*s.runtime, request_id);
  // The adapter cancelled a claim that was not released: sessions waiting for it or copying
  // it are told, and it ends once none copies it.
  abandon_share(request_id, s.id,
                Status::cancelled("request " + std::to_string(request_id) +
                                  " finished before its claim was released"));
  if (!shares_.count(request_id)) owner_.erase(request_id);
  return Status::ok();
}


}  // namespace tempokv::service
