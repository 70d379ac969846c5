#include "tempokv/runtime_adapter.h"

#include <algorithm>

namespace tempokv {
namespace {

constexpr Duration kUnknownTtu = std::chrono::hours(1);

}  // namespace

Status AdapterOptions::validate() const {
  if (max_active == 0) return Status::invalid_argument("AdapterOptions.max_active must be >= 1");
  if (predictor_window == 0) {
    return Status::invalid_argument("AdapterOptions.predictor_window must be >= 1");
  }
  if (prior_output_tokens == 0) {
    return Status::invalid_argument("AdapterOptions.prior_output_tokens must be >= 1");
  }
  return Status::ok();
}

Result<std::unique_ptr<RuntimeAdapter>> RuntimeAdapter::create(Controller& controller,
                                                               const CostProfile& profile,
                                                               const AdapterOptions& options) {
  TEMPOKV_RETURN_IF_ERROR(options.validate());
  TEMPOKV_RETURN_IF_ERROR(profile.validate());
  return std::unique_ptr<RuntimeAdapter>(
      new RuntimeAdapter(controller, profile, options));
}

RuntimeAdapter::RuntimeAdapter(Controller& controller, const CostProfile& profile,
                               const AdapterOptions& options)
    : controller_(controller),
      profile_(profile),
      options_(options),
      predictor_(options.predictor_window, options.prior_output_tokens),
      estimator_(profile_, predictor_) {}

Result<RuntimeAdapter::Req*> RuntimeAdapter::find(uint64_t id, const char* call) {
  auto it = requests_.find(id);
  if (it == requests_.end()) {
    return Status::not_found(std::string(call) + ": request " + std::to_string(id) +
                             " is unknown");
  }
  return &it->second;
}

Status RuntimeAdapter::add_request(const RequestInfo& request) {
  if (requests_.count(request.id)) {
    return Status::failed_precondition("add_request: request " + std::to_string(request.id) +
                                       " is already known");
  }
  if (request.prompt_tokens == 0 || request.cached_tokens > request.prompt_tokens) {
    return Status::invalid_argument("add_request: request " + std::to_string(request.id) +
                                    " has " + std::to_string(request.cached_tokens) +
                                    " cached of " + std::to_string(request.prompt_tokens) +
                                    " prompt tokens");
  }
  if (request.max_output_tokens == 0) {
    return Status::invalid_argument("add_request: request " + std::to_string(request.id) +
                                    " has a generation limit of zero");
  }
  requests_[request.id].info = request;
  return Status::ok();
}

Status RuntimeAdapter::report_hit(uint64_t id, std::vector<ManifestEntry> manifest) {
  TEMPOKV_ASSIGN_OR_RETURN(Req * r, find(id, "report_hit"));
  if (r->has_claim) {
    return Status::failed_precondition("report_hit: request " + std::to_string(id) +
                                       " already has a claim");
  }
  if (r->phase != Phase::kWaiting) {
    return Status::failed_precondition("report_hit: request " + std::to_string(id) +
                                       " is no longer waiting");
  }
  // Until an order update places it, its TTU is the last projected one, or unknown (far away):
  // a claim is never committed early for want of an estimate; retrieval still makes it eligible.
  Duration ttu = r->last_ttu >= Duration::zero() ? r->last_ttu : kUnknownTtu;
  TEMPOKV_RETURN_IF_ERROR(controller_.report(id, std::move(manifest), ttu));
  r->has_claim = true;
  return Status::ok();
}

Status RuntimeAdapter::update_order(std::span<const uint64_t> waiting, Duration boundary_in) {
  RuntimeSnapshot snap;
  snap.max_active = options_.max_active;
  snap.boundary_in_ns = static_cast<uint64_t>(std::max(Duration::zero(), boundary_in).count());
  for (uint64_t id : running_) {
    // As it will be at the boundary: the running iteration's prefills and decodes done.
    const Req& r = requests_.at(id);
    bool prefilled = r.prefill_done || r.prefill_in_iteration;
    uint32_t generated = r.generated + (r.decode_in_iteration ? 1 : 0);
    if (r.prefill_in_iteration) generated = std::max<uint32_t>(generated, 1);
    snap.running.push_back({id, r.info.prompt_tokens + generated, generated,
                            r.info.max_output_tokens,
                            prefilled ? 0u : r.info.prompt_tokens - r.info.cached_tokens});
  }
  snap.waiting.reserve(waiting.size());
  for (uint64_t id : waiting) {
    TEMPOKV_ASSIGN_OR_RETURN(Req * r, find(id, "update_order"));
    if (r->phase != Phase::kWaiting) {
      return Status::invalid_argument("update_order: request " + std::to_string(id) +
                                      " is not waiting");
    }
    snap.waiting.push_back({id, r->info.prompt_tokens, r->info.cached_tokens,
                            r->info.cached_bytes, r->info.max_output_tokens});
  }
  std::vector<Duration> ttu = estimator_.estimate(snap);
  std::vector<std::pair<ClaimId, Duration>> updates;
  std::vector<ClaimId> order;
  for (size_t i = 0; i < waiting.size(); ++i) {
    Req& r = requests_.at(waiting[i]);
    r.last_ttu = ttu[i];
    if (!r.has_claim) continue;
    updates.emplace_back(waiting[i], ttu[i]);
    order.push_back(waiting[i]);
  }
  return controller_.update(updates, order, options_.runtime_id);
}

Status RuntimeAdapter::iteration_started(std::span<const uint64_t> prefills,
                                         std::span<const uint64_t> decoders) {
  for (uint64_t id : prefills) {
    TEMPOKV_ASSIGN_OR_RETURN(Req * r, find(id, "iteration_started"));
    if (r->phase != Phase::kRunning) {
      return Status::failed_precondition("iteration_started: request " + std::to_string(id) +
                                         " prefills but is not running");
    }
    r->prefill_in_iteration = true;
  }
  for (uint64_t id : decoders) {
    TEMPOKV_ASSIGN_OR_RETURN(Req * r, find(id, "iteration_started"));
    if (r->phase != Phase::kRunning) {
      return Status::failed_precondition("iteration_started: request " + std::to_string(id) +
                                         " decodes but is not running");
    }
    r->decode_in_iteration = true;
  }
  return Status::ok();
}

Status RuntimeAdapter::admitted(uint64_t id) {
  TEMPOKV_ASSIGN_OR_RETURN(Req * r, find(id, "admitted"));
  if (r->phase != Phase::kWaiting) {
    return Status::failed_precondition("admitted: request " + std::to_string(id) +
                                       " is not waiting");
  }
  r->phase = Phase::kRunning;
  running_.push_back(id);
  return Status::ok();
}

Status RuntimeAdapter::prefill_done(uint64_t id) {
  TEMPOKV_ASSIGN_OR_RETURN(Req * r, find(id, "prefill_done"));
  if (r->phase != Phase::kRunning) {
    return Status::failed_precondition("prefill_done: request " + std::to_string(id) +
                                       " is not running");
  }
  r->prefill_done = true;
  r->prefill_in_iteration = false;
  r->generated = std::max<uint32_t>(r->generated, 1);
  return Status::ok();
}

Status RuntimeAdapter::tokens_generated(uint64_t id, uint32_t total_generated) {
  TEMPOKV_ASSIGN_OR_RETURN(Req * r, find(id, "tokens_generated"));
  if (r->phase != Phase::kRunning) {
    return Status::failed_precondition("tokens_generated: request " + std::to_string(id) +
                                       " is not running");
  }
  r->generated = total_generated;
  r->decode_in_iteration = false;
  return Status::ok();
}

Status RuntimeAdapter::finished(uint64_t id, uint32_t output_tokens) {
  TEMPOKV_ASSIGN_OR_RETURN(Req * r, find(id, "finished"));
  if (r->phase == Phase::kFinished) {
    return Status::failed_precondition("finished: request " + std::to_string(id) +
                                       " already finished");
  }
  if (r->phase == Phase::kRunning) predictor_.record_completion(output_tokens);
  const bool claimed = r->has_claim;
  std::erase(running_, id);
  requests_.erase(id);
  // A claim the finished request no longer needs must not stay behind to commit or stay
  // protected: it is cancelled (one being copied ends when its copier reports end_transfer).
  if (!claimed) return Status::ok();
  Result<ClaimInfo> claim = controller_.info(id);
  if (!claim.is_ok() || claim->state == ClaimState::kReleased || claim->cancelled) {
    return Status::ok();
  }
  return controller_.cancel(id);
}

Result<RetrievalAnswer> RuntimeAdapter::request_retrieval(uint64_t id,
                                                          RetrievalCallback on_ready) {
  TEMPOKV_ASSIGN_OR_RETURN(Req * r, find(id, "request_retrieval"));
  if (!r->has_claim) {
    return Status::failed_precondition("request_retrieval: request " + std::to_string(id) +
                                       " reported no hit");
  }
  return controller_.request_retrieval(id, std::move(on_ready));
}

Status RuntimeAdapter::begin_transfer(uint64_t id) { return controller_.begin_transfer(id); }
Status RuntimeAdapter::end_transfer(uint64_t id) { return controller_.end_transfer(id); }
Status RuntimeAdapter::object_transferred(uint64_t id, const Key& key) {
  return controller_.object_transferred(id, key);
}

Status RuntimeAdapter::cancel(uint64_t id) {
  auto it = requests_.find(id);
  bool claimed = it == requests_.end() || it->second.has_claim;
  if (it != requests_.end()) {
    std::erase(running_, id);
    requests_.erase(it);
  }
  if (!claimed) return Status::ok();
  return controller_.cancel(id);
}

Result<Duration> RuntimeAdapter::last_ttu(uint64_t id) const {
  auto it = requests_.find(id);
  if (it == requests_.end() || it->second.last_ttu < Duration::zero()) {
    return Status::not_found("last_ttu: no estimate for request " + std::to_string(id));
  }
  return it->second.last_ttu;
}

}  // namespace tempokv
