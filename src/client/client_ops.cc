// ServiceClient's ops: each builds its protocol op and makes one call (put makes three; progress
// reports may be pipelined). What the daemon answers is the adapter's answer; the client adds
// only its own bookkeeping of claims.
#include <algorithm>
#include <cstring>

#include "common/checksum.h"

#include "tempokv/client.h"

namespace tempokv {

namespace s = service;

Status ServiceClient::add_request(const RequestInfo& request) {
  return call_status(s::AddRequest{request});
}

Status ServiceClient::add_request(const RequestInfo& request, std::vector<ManifestEntry> manifest) {
  if (manifest.empty()) return add_request(request);
  if (version_ < s::kStepEditsVersion) {
    TEMPOKV_RETURN_IF_ERROR(add_request(request));
    Status st = report_hit(request.id, std::move(manifest));
    if (!st.is_ok()) (void)finished(request.id, 0);  // as the daemon of version 4 does
    return st;
  }
  return call_status(s::AddRequest{request, std::move(manifest)});
}

Status ServiceClient::report_hit(uint64_t id, std::vector<ManifestEntry> manifest) {
  return call_status(s::ReportHit{id, std::move(manifest)});
}

Status ServiceClient::update_order(std::span<const uint64_t> waiting, Duration boundary_in) {
  // A negative boundary means the same as zero to the adapter; the wire field is unsigned.
  return report(s::UpdateOrder{{waiting.begin(), waiting.end()},
                               std::max(Duration::zero(), boundary_in).count()});
}

Status ServiceClient::iteration_started(std::span<const uint64_t> prefills,
                                        std::span<const uint64_t> decoders) {
  return report(
      s::IterationStarted{{prefills.begin(), prefills.end()}, {decoders.begin(), decoders.end()}});
}

Status ServiceClient::admitted(uint64_t id) { return report(s::Admitted{id}); }

Status ServiceClient::prefill_done(uint64_t id) { return report(s::PrefillDone{id}); }

Status ServiceClient::tokens_generated(uint64_t id, uint32_t total_generated) {
  return report(s::TokensGenerated{id, total_generated});
}

Status ServiceClient::finished(uint64_t id, uint32_t output_tokens) {
  return report(s::Finished{id, output_tokens});
}

Result<RetrievalAnswer> ServiceClient::request_retrieval(uint64_t id, RetrievalCallback on_ready) {
  TEMPOKV_ASSIGN_OR_RETURN(s::Reply reply, call(s::RequestRetrieval{id}));
  if (!reply.answer) {
    return Status::internal("tempokvd answered request_retrieval(" + std::to_string(id) +
                            ") without an answer");
  }
  Claim& claim = claims_[id];
  claim = Claim{};
  if (*reply.answer == RetrievalAnswer::kWait) {
    // A notification already queued for it is delivered by dispatch(), which finds it waiting.
    claim.waiting = true;
    claim.on_ready = std::move(on_ready);
  } else {
    claim.ready = true;
    claim.objects = std::move(reply.objects);
  }
  return *reply.answer;
}

Status ServiceClient::begin_transfer(uint64_t id) { return call_status(s::BeginTransfer{id}); }

Status ServiceClient::end_transfer(uint64_t id) {
  TEMPOKV_RETURN_IF_ERROR(call_status(s::EndTransfer{id}));
  claims_.erase(id);  // its spans may be reused by the daemon from now on
  return Status::ok();
}

Status ServiceClient::object_transferred(uint64_t id, const Key& key) {
  return report(s::ObjectTransferred{id, key});
}

Status ServiceClient::cancel(uint64_t id) {
  // Forgotten whatever the daemon says: the runtime has given the claim up either way.
  claims_.erase(id);
  return call_status(s::Cancel{id});
}

Result<Duration> ServiceClient::last_ttu(uint64_t /*id*/) const {
  return Status::failed_precondition("last_ttu is not available through the service");
}

Status ServiceClient::heartbeat() { return call_status(s::Heartbeat{}); }

Status ServiceClient::bye() {
  stop_heartbeat_thread();  // first: a heartbeat after the bye would find the session gone
  Status st = call_status(s::Bye{});
  closed_ = true;
  detach();
  claims_.clear();
  std::lock_guard<std::recursive_mutex> lock(mu_);
  notifications_.clear();
  return st;
}

Result<std::vector<uint64_t>> ServiceClient::lookup(std::span<const Key> keys) {
  TEMPOKV_ASSIGN_OR_RETURN(s::Reply reply, call(s::Lookup{{keys.begin(), keys.end()}}));
  if (reply.bytes.size() != keys.size()) {
    return Status::internal("tempokvd answered a lookup of " + std::to_string(keys.size()) +
                            " keys with " + std::to_string(reply.bytes.size()) + " sizes");
  }
  return std::move(reply.bytes);
}

Status ServiceClient::put(const Key& key, TokenRange tokens, std::span<const std::byte> payload) {
  if (payload.empty()) return Status::invalid_argument("put: empty payload");
  if (!options_.map_shared_memory) {
    return Status::failed_precondition(
        "put: this client maps no shared memory (ClientOptions::map_shared_memory)");
  }
  const uint64_t recoveries = recoveries_;
  Status st = put_once(key, tokens, payload);
  // The daemon lost the session while the put was on its way or in flight, and answers again (a
  // restart): the same bytes are put once more in the new session. Safe whether or not the first
  // put was stored: a put of the bytes already stored under the key succeeds without writing.
  if (st.code() == StatusCode::kUnavailable && options_.reconnect && !closed_ &&
      (session_lost_.load() || recoveries_ != recoveries)) {
    st = put_once(key, tokens, payload);
  }
  return st;
}

Status ServiceClient::put_once(const Key& key, TokenRange tokens,
                               std::span<const std::byte> payload) {
  const uint64_t bytes = payload.size();
  TEMPOKV_ASSIGN_OR_RETURN(s::Reply reserved, call(s::ReserveWrite{bytes}));
  if (!reserved.offset) {
    return Status::internal("tempokvd answered reserve_write without an offset");
  }
  const uint64_t offset = *reserved.offset;
  Result<std::shared_ptr<service::ClientMapping>> region = write_region(reserved);
  if (!region.is_ok()) {
    static_cast<void>(call_status(s::AbortWrite{offset}));
    return region.status();
  }
  const service::ClientMapping& write = **region;
  if (offset > write.bytes() || bytes > write.bytes() - offset) {
    static_cast<void>(call_status(s::AbortWrite{offset}));
    return Status::internal("tempokvd reserved " + std::to_string(bytes) + " bytes at offset " +
                            std::to_string(offset) + ", outside the write region of " +
                            std::to_string(write.bytes()) + " bytes");
  }
  // Hashed from the caller's bytes, not the region's: the daemon stores the object only if the
  // region holds what this client meant to put.
  const Hash128 sum = xxh3_128(payload.data(), bytes);
  std::memcpy(write.data() + offset, payload.data(), bytes);
  // The daemon frees the reservation whatever the put's outcome: no abort_write after it.
  return call_status(s::Put{key, tokens, offset, bytes, sum.low, sum.high});
}

Result<std::shared_ptr<service::ClientMapping>> ServiceClient::write_region(
    const s::Reply& reserved) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (reserved.write_path.empty()) {
    return Status::internal("tempokvd answered reserve_write without its write region's path");
  }
  if (write_ && write_path_ == reserved.write_path) return write_;
  auto mapped = service::ClientMapping::map(reserved.write_path, reserved.write_bytes, true);
  if (!mapped.is_ok()) {
    return Status(mapped.status().code(),
                  "mapping the write region: " + mapped.status().message());
  }
  write_ = std::make_shared<service::ClientMapping>(std::move(mapped).value());
  write_path_ = reserved.write_path;
  return write_;
}

Status ServiceClient::step(service::Step step) {
  if (version_ < service::kStepVersion) {
    return Status::failed_precondition(
        "step: tempokvd at " + options_.endpoint + " speaks protocol version " +
        std::to_string(version_) + "; step needs " + std::to_string(service::kStepVersion));
  }
  if (step.base) {
    return Status::invalid_argument("step: base is the client's to set (give the lists in full)");
  }
  if (options_.reconnect && session_lost_.load()) TEMPOKV_RETURN_IF_ERROR(recover());
  step.seq = ++step_seq_;
  const bool edits = options_.step_edits && version_ >= service::kStepEditsVersion;
  service::StepLists lists;
  if (edits) lists = {step.decoders, step.waiting};
  uint64_t errors = 0, recoveries = 0;
  {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (edits) route_messages();  // a late error already here: the daemon may hold no lists
    errors = late_errors_;
    recoveries = recoveries_;
  }
  if (edits && step_lists_seq_ != 0 && errors == step_lists_errors_ &&
      recoveries == step_lists_recoveries_) {
    service::make_step_edits(step, step_lists_, step_lists_seq_);
  }
  const uint64_t seq = step.seq;
  Status st = send_only(std::move(step));
  step_lists_seq_ = 0;
  if (edits && st.is_ok() && recoveries_ == recoveries) {
    step_lists_ = std::move(lists);
    step_lists_seq_ = seq;
    step_lists_errors_ = errors;
    step_lists_recoveries_ = recoveries;
  }
  return st;
}

Result<service::StatList> ServiceClient::stats() {
  TEMPOKV_ASSIGN_OR_RETURN(s::Reply reply, call(s::GetStats{}));
  return std::move(reply.stats);
}

}  // namespace tempokv
