#include "adapter/runtime_adapter.h"

#include <algorithm>
#include <cmath>

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
  if (!(calibration_weight >= 0 && calibration_weight <= 1)) {
    return Status::invalid_argument("AdapterOptions.calibration_weight must be in [0, 1]");
  }
  if (!(wait_quantile >= 0 && wait_quantile <= 1)) {
    return Status::invalid_argument("AdapterOptions.wait_quantile must be in [0, 1]");
  }
  if (!(pressure_deferral >= 0)) {
    return Status::invalid_argument("AdapterOptions.pressure_deferral must be >= 0");
  }
  if (wait_order_statistics && wait_quantile > 0) {
    return Status::invalid_argument(
        "AdapterOptions.wait_order_statistics takes the conditional distributions: wait_quantile "
        "must be 0");
  }
  return Status::ok();
}

Result<std::unique_ptr<RuntimeAdapter>> RuntimeAdapter::create(Controller& controller,
                                                               const CostProfile& profile,
                                                               const AdapterOptions& options) {
  TEMPOKV_RETURN_IF_ERROR(options.validate());
  TEMPOKV_RETURN_IF_ERROR(profile.validate());
  std::unique_ptr<RuntimeAdapter> adapter(new RuntimeAdapter(controller, profile, options));
  adapter->register_reviser();
  return adapter;
}

void RuntimeAdapter::register_reviser() {
  // When a claim's lower-bound TTU comes into the commit window between two order updates, the
  // controller asks for exact estimates: the same order projected from now.
  std::weak_ptr<int> alive = alive_;
  controller_.set_reviser(options_.runtime_id, [this, alive] {
    if (alive.expired()) return;
    std::vector<uint64_t> order;
    order.reserve(last_order_.size());
    for (uint64_t id : last_order_) {
      const Req* r = requests_.find(id);
      if (r && r->phase == Phase::kWaiting) order.push_back(id);
    }
    revising_ = true;
    (void)update_order(order);
    revising_ = false;
  });
}

Duration RuntimeAdapter::horizon_slack(TimePoint now, Duration boundary_in) {
  if (!revising_) {
    if (last_update_at_) {
      gaps_[gap_next_ % gaps_.size()] = now - *last_update_at_;
      ++gap_next_;
    }
    last_update_at_ = now;
  }
  if (!options_.rhythm_horizon || gap_next_ == 0) return Controller::kMaxHorizonSlack;
  Duration longest = boundary_in;
  for (size_t i = 0; i < std::min(gap_next_, gaps_.size()); ++i) {
    longest = std::max(longest, gaps_[i]);
  }
  return std::clamp(2 * longest, kMinHorizonSlack, Controller::kMaxHorizonSlack);
}

RuntimeAdapter::RuntimeAdapter(Controller& controller, const CostProfile& profile,
                               const AdapterOptions& options)
    : controller_(controller),
      profile_(profile),
      calibrated_(profile),
      options_(options),
      predictor_(options.predictor_window, options.prior_output_tokens),
      estimator_(calibrated_, predictor_, options.wait_quantile, options.wait_order_statistics) {}

Result<RuntimeAdapter::Req*> RuntimeAdapter::find(uint64_t id, const char* call) {
  Req* r = requests_.find(id);
  if (!r) {
    return Status::not_found(std::string(call) + ": request " + std::to_string(id) +
                             " is unknown");
  }
  return r;
}

Status RuntimeAdapter::add_request(const RequestInfo& request) {
  if (requests_.contains(request.id)) {
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
  ++requests_changes_;
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

Duration RuntimeAdapter::ready_in(uint64_t id) const {
  Result<Duration> r = controller_.ready_in(id);
  return r.is_ok() ? *r : Duration::zero();
}

Status RuntimeAdapter::update_order(std::span<const uint64_t> waiting, Duration) {
  const TimePoint now = controller_.now();
  RuntimeSnapshot& snap = snap_;  // reused: no allocation per update
  snap.running.clear();
  snap.waiting.clear();
  snap.max_active = options_.max_active;
  snap.kv_capacity_tokens = profile_.kv_capacity_tokens;
  snap.token_budget = options_.token_budget;
  snap.boundary_in_ns = 0;
  if (iteration_open_) {
    const Duration left = iteration_start_ +
                          Duration(std::llround(
                              double(iteration_cost_.prefill.count()) * prefill_scale_.value +
                              double(iteration_cost_.decode.count()) * decode_scale_.value)) -
                          now;
    snap.boundary_in_ns = static_cast<uint64_t>(std::max(Duration::zero(), left).count());
  }
  snap.async_loads = options_.async_loads;
  uint32_t lookahead = options_.readiness_lookahead;
  for (uint64_t id : running_) {
    // As it will be at the boundary: the running iteration's prefills and decodes done.
    const Req& r = *requests_.find(id);
    // A chunked prefill is done at the boundary only if the running iteration computes its
    // last chunk (prefilled_tokens already counts the chunks up to the running iteration's).
    const uint32_t to_compute = r.info.prompt_tokens - r.info.cached_tokens;
    const uint32_t chunks_done = std::min(r.prefilled_tokens, to_compute);
    bool prefilled = r.prefill_done || (r.prefill_in_iteration && chunks_done >= to_compute);
    uint32_t generated = r.generated + (r.decode_in_iteration ? 1 : 0);
    if (prefilled && r.prefill_in_iteration) generated = std::max<uint32_t>(generated, 1);
    RunningRequest rr{id, r.info.prompt_tokens + generated, generated, r.info.max_output_tokens,
                      prefilled ? 0u : to_compute - chunks_done};
    rr.preempted = r.preempted;
    if (options_.async_loads) {
      // Admitted with a claim and no chunk run yet: loading, off the slots (vLLM's
      // WAITING_FOR_REMOTE_KVS); otherwise its KV has arrived.
      rr.prefill_tokens_left = prefilled ? 0u : std::max<uint32_t>(1, rr.prefill_tokens_left);
      rr.loading =
          r.has_claim && !r.prefill_done && !r.prefill_in_iteration && r.prefilled_tokens == 0;
      if (rr.loading) {
        const bool ask = lookahead > 0;
        if (ask) --lookahead;
        rr.ready_in_ns = static_cast<uint64_t>(loaded_in(id, r, ask).count());
      }
    } else if (!prefilled) {
      rr.prefill_tokens_left = std::max<uint32_t>(1, rr.prefill_tokens_left);
      // Its retrieval ran with its first chunk.
      rr.cached_bytes = r.has_claim && chunks_done == 0 ? r.info.cached_bytes : 0;
      if (r.has_claim && lookahead > 0) {
        --lookahead;
        rr.ready_in_ns = static_cast<uint64_t>(ready_in(id).count());
      }
    }
    snap.running.push_back(rr);
  }
  snap.waiting.reserve(waiting.size());
  std::vector<uint64_t>& order = scratch_order_;  // `waiting` without requests admitted before
  if (!order_checked_.holds(waiting, requests_changes_)) {
    order_checked_.forget();  // until every request is found
    order.clear();
    order.reserve(waiting.size());
    scratch_waiting_.clear();
    for (uint64_t id : waiting) {
      TEMPOKV_ASSIGN_OR_RETURN(Req * r, find(id, "update_order"));
      // Admitted once, admitted for good: a runtime may queue it again (its KV load failed, or
      // its claim ended otherwise, and it waits to be computed), but its slot is taken.
      if (r->phase != Phase::kWaiting) continue;
      order.push_back(id);
      scratch_waiting_.push_back(r);
    }
    order_checked_.checked(waiting, requests_changes_);
  }
  for (const Req* r : scratch_waiting_) {
    const uint64_t id = r->info.id;
    // Filled in place, field by field: a temporary copied in whole stalled on store forwarding
    // (two 8-byte stores read back as one 16-byte load), a third of this loop's time.
    WaitingRequest& w = snap.waiting.emplace_back();
    w.id = id;
    w.prompt_tokens = r->info.prompt_tokens;
    w.cached_tokens = r->info.cached_tokens;
    w.cached_bytes = r->info.cached_bytes;
    w.max_output_tokens = r->info.max_output_tokens;
    if (r->has_claim && lookahead > 0) {
      --lookahead;
      w.ready_in_ns = static_cast<uint64_t>(ready_in(id).count());
    }
    if (r->has_claim && options_.async_loads) {
      w.load_ns = static_cast<uint64_t>(load_time(r->info.cached_bytes).count());
    }
  }
  // Exact TTUs as far as they can matter to the controller; a lower bound beyond (a claim there
  // cannot become eligible before the next update), and no estimate for a request without a claim
  // (a hit it reports later starts far away, as before any projection).
  // A claim whose last reported use was already a lower bound still at least a horizon away
  // needs no new one (the controller ages it, and it cannot reach the window before it is
  // revised); so a long queue beyond the horizon costs no controller work per update.
  const Duration horizon =
      controller_.ttu_horizon(horizon_slack(now, Duration(int64_t(snap.boundary_in_ns))));
  const double deferral_line =
      options_.pressure_deferral * double(estimator_.preemption_line());
  std::vector<uint64_t>* admission_context =
      deferral_line > 0 && !options_.async_loads ? &scratch_admission_context_ : nullptr;
  // With the rhythm's short horizon, the chain's claims exactly, wherever they lie: a bound there
  // would pull the deadlines of the claims before it earlier than their true chain does.
  size_t exact_through = 0;
  for (size_t i = 0, left = options_.rhythm_horizon ? controller_.chain_span() : 0;
       i < order.size() && left > 0; ++i) {
    if (scratch_waiting_[i]->has_claim) {
      exact_through = i + 1;
      --left;
    }
  }
  std::vector<Duration> ttu = estimator_.estimate(snap, horizon, admission_context, exact_through);
  std::vector<uint8_t>& deferred = scratch_deferred_;  // a deferred TTU is a bound wherever
  deferred.assign(admission_context ? ttu.size() : 0, 0);
  if (admission_context) {
    for (size_t i = 0; i < ttu.size(); ++i) {
      if (double((*admission_context)[i]) > deferral_line) {
        ttu[i] = std::max(ttu[i], kUnknownTtu);
        deferred[i] = 1;
      }
    }
  }
  std::vector<std::pair<ClaimId, Duration>>& updates = scratch_updates_;
  std::vector<uint8_t>& lower_bound = scratch_lower_bound_;  // per update: a bound only
  updates.clear();
  lower_bound.clear();
  for (size_t i = 0; i < order.size(); ++i) {
    Req& r = *scratch_waiting_[i];
    const bool bounded =
        ttu[i] > horizon && (i >= exact_through || (!deferred.empty() && deferred[i]));
    r.last_ttu = bounded ? Duration(-1) : ttu[i];
    if (!r.has_claim) continue;
    if (bounded && r.bound_use_at && horizon < TimePoint::max() - now &&
        *r.bound_use_at >= now + horizon) {
      continue;
    }
    updates.emplace_back(order[i], ttu[i]);
    lower_bound.push_back(bounded ? 1 : 0);
    r.bound_use_at.reset();
    if (bounded && ttu[i] < TimePoint::max() - now) r.bound_use_at = now + ttu[i];
  }
  // The whole queue, hits or not: Queue-K ranks over the runtime's full waiting queue.
  Status st = controller_.update(updates, order, options_.runtime_id, lower_bound);
  last_order_.assign(order.begin(), order.end());  // a revision (posted) reads it
  return st;
}

RuntimeAdapter::Stats RuntimeAdapter::stats() const {
  Stats s;
  s.running = running_.size();
  s.waiting = requests_.size() - running_.size();
  s.iterations_calibrated = iterations_calibrated_;
  s.runtime_measures = runtime_measures_;
  return s;
}

Status RuntimeAdapter::iteration_started(std::span<const uint64_t> prefills,
                                         std::span<const uint64_t> decoders) {
  return iteration_started(prefills, {}, decoders);
}

Status RuntimeAdapter::iteration_started(std::span<const uint64_t> prefills,
                                         std::span<const uint32_t> prefill_tokens,
                                         std::span<const uint64_t> decoders) {
  if (!prefill_tokens.empty() && prefill_tokens.size() != prefills.size()) {
    return Status::invalid_argument("iteration_started: " +
                                    std::to_string(prefill_tokens.size()) + " chunk sizes for " +
                                    std::to_string(prefills.size()) + " prefills");
  }
  for (uint64_t id : prefills) {
    TEMPOKV_ASSIGN_OR_RETURN(Req * r, find(id, "iteration_started"));
    if (r->phase != Phase::kRunning) {
      return Status::failed_precondition("iteration_started: request " + std::to_string(id) +
                                         " prefills but is not running");
    }
    r->prefill_in_iteration = true;
  }
  uint64_t decode_context = 0;
  for (uint64_t id : decoders) {
    TEMPOKV_ASSIGN_OR_RETURN(Req * r, find(id, "iteration_started"));
    if (r->phase != Phase::kRunning) {
      return Status::failed_precondition("iteration_started: request " + std::to_string(id) +
                                         " decodes but is not running");
    }
    r->decode_in_iteration = true;
    decode_context += r->info.prompt_tokens + r->generated;
  }
  // A step at or below the preemption line ends the episode of KV pressure.
  const uint64_t line = estimator_.preemption_line();
  if (line > 0 && !decoders.empty() && decode_context <= line) {
    for (uint64_t id : running_) requests_.find(id)->preempted = false;
  }
  iteration_open_ = true;
  iteration_start_ = controller_.now();
  iteration_cost_ = iteration_cost(prefills, prefill_tokens, decoders);
  // What the chunks will have computed at the iteration's end (the next chunk's context); a
  // prefill without a chunk size computes all that is left.
  for (size_t i = 0; i < prefills.size(); ++i) {
    Req& r = *requests_.find(prefills[i]);
    const uint32_t chunk = i < prefill_tokens.size() ? prefill_tokens[i] : 0;
    const uint32_t to_compute = r.info.prompt_tokens - r.info.cached_tokens;
    r.prefilled_tokens = chunk == 0 ? to_compute : r.prefilled_tokens + chunk;
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
  ++requests_changes_;
  running_.push_back(id);
  return Status::ok();
}

Status RuntimeAdapter::prefill_done(uint64_t id) {
  TEMPOKV_ASSIGN_OR_RETURN(Req * r, find(id, "prefill_done"));
  if (r->phase != Phase::kRunning) {
    return Status::failed_precondition("prefill_done: request " + std::to_string(id) +
                                       " is not running");
  }
  iteration_ended();
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
  iteration_ended();
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
  ++requests_changes_;
  // A claim the finished request no longer needs must not stay behind to commit or stay
  // protected: it is cancelled (one being copied ends when its copier reports end_transfer).
  if (!claimed || claim_ended(id)) return Status::ok();
  return controller_.cancel(id);
}

bool RuntimeAdapter::claim_ended(uint64_t id) const {
  Result<ClaimInfo> claim = controller_.info(id);
  return !claim.is_ok() || claim->state == ClaimState::kReleased || claim->cancelled;
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

Status RuntimeAdapter::begin_transfer(uint64_t id) {
  TEMPOKV_RETURN_IF_ERROR(controller_.begin_transfer(id));
  if (Req* r = requests_.find(id)) r->transfer_began = controller_.now();
  return Status::ok();
}

Status RuntimeAdapter::end_transfer(uint64_t id) {
  // A copy cut short (its claim cancelled) measures nothing.
  std::optional<TimePoint> began;
  uint64_t bytes = 0;
  if (const Req* r = requests_.find(id); r && r->transfer_began && !claim_ended(id)) {
    began = r->transfer_began;
    bytes = r->info.cached_bytes;
  }
  TEMPOKV_RETURN_IF_ERROR(controller_.end_transfer(id));
  if (began && bytes > 0) record_load(profile_.retrieval(bytes), controller_.now() - *began);
  return Status::ok();
}

Status RuntimeAdapter::object_transferred(uint64_t id, const Key& key) {
  return controller_.object_transferred(id, key);
}

Status RuntimeAdapter::cancel(uint64_t id) {
  const Req* r = requests_.find(id);
  const bool known = r != nullptr;
  const bool claimed = !known || r->has_claim;
  if (known) {
    std::erase(running_, id);
    requests_.erase(id);
    ++requests_changes_;
    // Its claim may have ended already (its KV was copied): then there is nothing to cancel.
    // A runtime that preempts a running request cancels it to forget it (vLLM recomputes it
    // and the connector queues it again under a new id, with a new claim).
    if (claimed && claim_ended(id)) return Status::ok();
  }
  if (!claimed) return Status::ok();
  return controller_.cancel(id);
}

Result<Duration> RuntimeAdapter::last_ttu(uint64_t id) const {
  const Req* r = requests_.find(id);
  if (!r || r->last_ttu < Duration::zero()) {
    return Status::not_found("last_ttu: no estimate for request " + std::to_string(id));
  }
  return r->last_ttu;
}

}  // namespace tempokv
