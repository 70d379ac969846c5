#include "eval/stack.h"

#include <algorithm>
#include <optional>

#include "common/units.h"
#include "ssd/sim_ssd_engine.h"
#include "workload/precompute.h"

namespace tempokv {

Result<std::unique_ptr<EvalStorage>> EvalStorage::open(const StorageConfig& config) {
  if (config.chunk_bytes == 0 || config.chunk_bytes % kBlockBytes != 0) {
    return Status::invalid_argument("StorageConfig.chunk_bytes must be a multiple of 4 KiB");
  }
  std::unique_ptr<EvalStorage> s(new EvalStorage(config));
  SsdEngineOptions eo;
  if (config.mode == EvalMode::kSim) {
    if (config.shared_sim == nullptr) s->own_sim_ = std::make_unique<SimExecutor>();
    s->sim_ = config.shared_sim ? config.shared_sim : s->own_sim_.get();
    s->executor_ = s->sim_;
    eo.kind = SsdEngineKind::kSimulated;
    eo.sim_latency = config.sim_latency;
    eo.sim_read_bytes_per_s = config.sim_read_bytes_per_s;
    eo.sim_write_bytes_per_s = config.sim_write_bytes_per_s;
    eo.sim_max_concurrency = config.sim_concurrency;
  } else {
    s->real_ = std::make_unique<RealExecutor>();
    s->executor_ = s->real_.get();
    if (!config.local_store) return s;
    if (config.dir.empty()) return Status::invalid_argument("real mode needs a store directory");
    eo.kind = SsdEngineKind::kUring;
    eo.direct = true;
    eo.threads = 2;
  }
  if (config.mode == EvalMode::kSim && config.sim_latency_tail_probability > 0) {
    auto ssd = std::make_unique<SimSsdEngine>(*s->executor_, eo);
    ssd->set_latency_tail(config.sim_latency_tail_probability, config.sim_latency_tail_factor,
                          config.sim_seed);
    s->ssd_ = std::move(ssd);
  } else {
    TEMPOKV_ASSIGN_OR_RETURN(s->ssd_, make_ssd_engine(*s->executor_, eo));
  }
  StoreOptions so;
  so.simulated = config.mode == EvalMode::kSim;
  so.dir = config.dir;
  so.segment_bytes = 64 * config.chunk_bytes;
  so.capacity_bytes = config.capacity_bytes;
  so.max_object_bytes = 4 * config.chunk_bytes;
  TEMPOKV_ASSIGN_OR_RETURN(s->store_, Store::open(*s->executor_, *s->ssd_, so));
  return s;
}

EvalStorage::~EvalStorage() {
  if (store_) (void)close();
}

Status EvalStorage::drive(const std::function<bool()>& done, const std::function<void()>& progress,
                          Duration real_limit) {
  if (sim_) {
    uint64_t events = 0;
    while (!done()) {
      if (!sim_->step()) return Status::internal("simulation stalled: no event left before the end");
      if (progress && (++events & 0xfff) == 0) progress();
    }
    if (progress) progress();
    return Status::ok();
  }
  bool timed_out = false;
  TimerHandle guard = real_->after(real_limit, [&] {
    timed_out = true;
    real_->stop();
  });
  uint64_t checks = 0;
  const bool ok = real_->run_until([&] {
    if (progress && (++checks & 0xff) == 0) progress();
    return done();
  });
  guard.cancel();
  if (progress) progress();
  if (!ok || timed_out) {
    return Status::unavailable("real-mode run did not finish within " +
                               std::to_string(to_seconds(real_limit)) + " s");
  }
  return Status::ok();
}

Status EvalStorage::precompute(const std::vector<Request>& requests) {
  if (!store_) return Status::failed_precondition("EvalStorage::precompute: no local store");
  std::optional<Status> result;
  PrecomputeOptions po;
  po.write_bytes = !sim_;
  po.max_in_flight = sim_ ? 64 : 8;
  precompute_kv(*store_, requests, po, [&](Result<PrecomputeStats> r) { result = r.status(); });
  TEMPOKV_RETURN_IF_ERROR(drive([&] { return result.has_value(); }, nullptr));
  return *result;
}

Status EvalStorage::close() {
  if (!store_) return Status::ok();
  std::optional<Status> result;
  store_->close([&](Status st) { result = st; });
  Status st = drive([&] { return result.has_value(); }, nullptr, std::chrono::minutes(1));
  store_.reset();
  if (!st.is_ok()) return st;
  return *result;
}

Result<std::unique_ptr<EvalStack>> EvalStack::create(EvalStorage& storage,
                                                     const StackConfig& config) {
  TEMPOKV_RETURN_IF_ERROR(config.profile.validate());
  if (config.engines == 0) return Status::invalid_argument("StackConfig.engines must be >= 1");
  std::unique_ptr<EvalStack> s(new EvalStack(storage, config));
  if (config.via_service()) {
    TEMPOKV_RETURN_IF_ERROR(s->create_service_engines());
    return s;
  }
  if (!storage.has_store()) {
    return Status::invalid_argument("EvalStack: an in-process stack needs a storage with a store");
  }
  Executor& ex = storage.executor();
  const bool sim = storage.sim() != nullptr;
  const uint64_t slot = round_up(storage.config().chunk_bytes, kBlockBytes);

  FastTierOptions to;
  to.capacity_bytes = config.fast_tier_bytes / slot * slot;
  to.protected_budget_bytes = config.budget_bytes / slot * slot;
  to.slot_bytes = slot;
  to.backing = sim ? BackingKind::kMetadata : BackingKind::kAnonymous;
  TEMPOKV_ASSIGN_OR_RETURN(s->tier_, FastTier::create(to));

  ProviderOptions po;
  po.max_reads_in_flight = config.max_reads_in_flight;
  po.prior_read_bytes_per_s = config.prior_read_bytes_per_s;
  po.static_read_bytes_per_s = config.static_read_bytes_per_s;
  const std::string policy = config.baseline() ? "demand" : config.policy;
  po.issue_order = config.issue_order.value_or(issue_order_of(policy));
  // The simulated device's own cost of a written byte against a read one (a real deployment
  // measures its drive's; the default 1 says writes cost as much as reads).
  if (config.write_cost) {
    po.write_cost = *config.write_cost;
  } else if (sim) {
    po.write_cost =
        storage.config().sim_read_bytes_per_s / storage.config().sim_write_bytes_per_s;
  }
  TEMPOKV_ASSIGN_OR_RETURN(s->provider_,
                           StagingProvider::create(ex, storage.store(), *s->tier_, po));
  if (config.remote_source) s->provider_->set_remote_source(config.remote_source);

  // The baseline's engines never call the controller; it still meters the tier (C stays 0 there
  // because nothing is protected).
  ControllerOptions co;
  co.tick = config.tick;
  co.error_feedback = config.error_feedback;
  if (config.feedback_quantile) co.feedback.quantile = *config.feedback_quantile;
  if (config.ttu_horizon) co.ttu_horizon = *config.ttu_horizon;
  co.chain_skips_bounds = config.rhythm_horizon;
  co.remote_prefetch = config.remote_prefetch;
  TEMPOKV_ASSIGN_OR_RETURN(s->controller_, make_controller(ex, *s->provider_, policy, co));
  if (config.write_produced_kv) s->writer_ = std::make_unique<KvWriter>(storage.store(), !sim);

  for (uint32_t k = 0; k < config.engines; ++k) {
    TransferEngineOptions xo;
    if (sim) {
      xo = sim_transfer_options(config.profile);
    } else {
      xo.kind = TransferEngineKind::kEmulated;
      xo.pin_with_mlock = false;  // the fast tier is not registered; nothing to pin
      // The device link runs at the profile's retrieval rate, as the GPU runs at its compute.
      xo.emulated_link_bytes_per_s = config.profile.retrieval_bytes_per_s;
    }
    TEMPOKV_ASSIGN_OR_RETURN(auto link, make_transfer_engine(ex, xo));
    s->links_.push_back(std::move(link));
    EngineOptions eo;
    eo.engine_id = k;
    eo.max_active = config.max_active;
    eo.jitter_sigma = config.jitter_sigma;
    eo.seed = config.seed + k;
    eo.baseline = config.baseline();
    eo.verify_bytes = config.verify_bytes;
    eo.prior_output_tokens = config.prior_output_tokens;
    eo.estimator_bias = config.estimator_bias;
    eo.estimator_error = config.estimator_error;
    eo.truth = config.truth;
    eo.wait_order_statistics = config.wait_order_statistics;
    eo.rhythm_horizon = config.rhythm_horizon;
    EngineContext c{&ex,
                    config.lookup_store ? config.lookup_store : &storage.store(),
                    s->provider_.get(),
                    config.baseline() ? nullptr : s->controller_.get(),
                    s->links_.back().get(),
                    s->writer_.get()};
    TEMPOKV_ASSIGN_OR_RETURN(auto engine, ServingEngine::create(c, config.profile, eo));
    s->engines_.push_back(std::move(engine));
  }
  return s;
}

EvalStack::~EvalStack() {
  // Engines first (they borrow the links, controller and provider), then the controller (it
  // listens to the tier), then the provider (no read may be in flight: run() drained them).
  engines_.clear();
  // Ends the sessions now rather than at the daemon's heartbeat timeout.
  for (auto& c : clients_) (void)c->bye();
  clients_.clear();
  controller_.reset();
  writer_.reset();
  provider_.reset();
  links_.clear();
  tier_.reset();
}

Status EvalStack::submit(std::vector<Request> requests, TimePoint start) {
  std::vector<std::vector<Request>> per(engines_.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    per[i % engines_.size()].push_back(std::move(requests[i]));
  }
  for (size_t k = 0; k < engines_.size(); ++k) {
    TEMPOKV_RETURN_IF_ERROR(engines_[k]->submit(std::move(per[k]), start));
  }
  return Status::ok();
}

bool EvalStack::engines_done() const {
  return std::all_of(engines_.begin(), engines_.end(), [](const auto& e) { return e->done(); });
}

uint64_t EvalStack::finished() const {
  uint64_t n = 0;
  for (const auto& e : engines_) n += e->stats().finished;
  return n;
}

uint64_t EvalStack::submitted() const {
  uint64_t n = 0;
  for (const auto& e : engines_) n += e->stats().submitted;
  return n;
}

Status EvalStack::run(const std::function<void(uint64_t, uint64_t)>& progress) {
  auto report = [&] {
    if (progress) progress(finished(), submitted());
  };
  TEMPOKV_RETURN_IF_ERROR(storage_.drive([&] { return engines_done(); }, report));
  if (config_.via_service()) {
    service_calls_ = sum_service_calls();
    Status drained = drain_service();
    // The replies to the last pipelined reports came in while the daemon drained.
    for (auto& c : clients_) c->dispatch();
    service_calls_.late_errors = sum_service_calls().late_errors;
    return drained;
  }
  // C runs until every reservation is released; the provider may be destroyed only with no read
  // in flight; produced KV lands in the store.
  auto drained = [&] {
    FastTierStats t = tier_->stats();
    ProviderStats p = provider_->stats();
    return t.protected_bytes + t.reserved_bytes == 0 && p.in_flight_reads == 0 &&
           p.queued_reads == 0 && (!writer_ || writer_->stats().in_flight == 0);
  };
  return storage_.drive(drained, nullptr, std::chrono::minutes(1));
}

std::vector<RequestRecord> EvalStack::records() const {
  std::vector<RequestRecord> out;
  for (const auto& e : engines_) {
    std::vector<RequestRecord> r = e->records();
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

EngineStats EvalStack::engine_stats() const {
  EngineStats s;
  for (const auto& e : engines_) {
    EngineStats x = e->stats();
    s.submitted += x.submitted;
    s.arrived += x.arrived;
    s.finished += x.finished;
    s.iterations += x.iterations;
    s.staged += x.staged;
    s.ordinary += x.ordinary;
    s.no_hit += x.no_hit;
    s.recomputes += x.recomputes;
    s.output_tokens += x.output_tokens;
    s.retrieved_bytes += x.retrieved_bytes;
    s.verified_chunks += x.verified_chunks;
    s.mismatched_chunks += x.mismatched_chunks;
    s.preemptions += x.preemptions;
  }
  return s;
}

}  // namespace tempokv
