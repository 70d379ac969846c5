// ServingEngine construction and its options; record and path names.
#include "engine/serving_engine.h"

#include "tempokv/client.h"

namespace tempokv {

std::string_view request_path_name(RequestPath path) {
  switch (path) {
    case RequestPath::kNoHit:
      return "no-hit";
    case RequestPath::kStaged:
      return "staged";
    case RequestPath::kOrdinary:
      return "ordinary";
    case RequestPath::kRecompute:
      return "recompute";
  }
  return "?";
}

Status EngineOptions::validate() const {
  if (max_active == 0) return Status::invalid_argument("EngineOptions.max_active must be >= 1");
  if (!(jitter_sigma >= 0 && jitter_sigma < 1)) {
    return Status::invalid_argument("EngineOptions.jitter_sigma must be in [0, 1)");
  }
  if (!(estimator_bias > -1 && estimator_bias < 100)) {
    return Status::invalid_argument("EngineOptions.estimator_bias must be in (-1, 100)");
  }
  if (!(estimator_error >= 0 && estimator_error < 0.9)) {
    return Status::invalid_argument("EngineOptions.estimator_error must be in [0, 0.9)");
  }
  TEMPOKV_RETURN_IF_ERROR(truth.validate());
  if (prior_output_tokens == 0 || predictor_window == 0) {
    return Status::invalid_argument(
        "EngineOptions.prior_output_tokens and predictor_window must be >= 1");
  }
  return Status::ok();
}

TransferEngineOptions sim_transfer_options(const CostProfile& profile) {
  TransferEngineOptions o;
  o.kind = TransferEngineKind::kSimulated;
  o.sim_copy_latency = Duration::zero();
  o.sim_bytes_per_s = profile.retrieval_bytes_per_s;
  return o;
}

Result<std::unique_ptr<ServingEngine>> ServingEngine::create(const EngineContext& c,
                                                             const CostProfile& profile,
                                                             const EngineOptions& options) {
  TEMPOKV_RETURN_IF_ERROR(options.validate());
  TEMPOKV_RETURN_IF_ERROR(profile.validate());
  if (c.service) {
    if (!c.executor || !c.transfer) {
      return Status::invalid_argument("EngineContext needs an executor and a transfer engine");
    }
    // Baseline engines read through a provider of their own; the writer puts into a local store.
    if (options.baseline || c.writer) {
      return Status::invalid_argument(
          "EngineContext.service: baseline engines and produced-KV writes need the in-process "
          "stack");
    }
  } else if (!c.executor || !c.store || !c.provider || !c.transfer) {
    return Status::invalid_argument("EngineContext needs an executor, store, provider, transfer");
  } else if (!options.baseline && !c.controller) {
    return Status::invalid_argument("EngineContext.controller is required unless baseline");
  }
  std::unique_ptr<ServingEngine> e(new ServingEngine(c, profile, options));
  if (c.service) {
    e->api_ = c.service;
  } else if (!options.baseline) {
    AdapterOptions ao;
    ao.max_active = options.max_active;
    ao.prior_output_tokens = options.prior_output_tokens;
    ao.predictor_window = options.predictor_window;
    ao.runtime_id = options.engine_id;  // engines sharing the controller keep separate orders
    ao.wait_order_statistics = options.wait_order_statistics;
    ao.rhythm_horizon = options.rhythm_horizon;
    TEMPOKV_ASSIGN_OR_RETURN(e->adapter_,
                             RuntimeAdapter::create(
                                 *c.controller, profile.scaled(1 + options.estimator_bias)
                                                      .perturbed(options.estimator_error),
                                                  ao));
    e->api_ = e->adapter_.get();
  }
  return e;
}

ServingEngine::ServingEngine(const EngineContext& c, const CostProfile& profile,
                             const EngineOptions& options)
    : executor_(*c.executor),
      store_(c.service ? nullptr : c.store),
      provider_(c.service ? nullptr : c.provider),
      controller_(c.service ? nullptr : c.controller),
      service_(c.service),
      transfer_(*c.transfer),
      writer_(c.writer),
      profile_(profile),
      options_(options),
      truth_(profile, options.truth, options.jitter_sigma, options.seed) {}

ServingEngine::~ServingEngine() = default;

}  // namespace tempokv
