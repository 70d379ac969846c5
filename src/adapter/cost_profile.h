// CostProfile: the calibrated compute costs of one model on one GPU (DESIGN.md §2), read from a
// JSON file in profiles/. The emulated engine draws its step times from it and the TTU estimator
// projects with it, so both speak the same execution model:
//   prefill of n new tokens      a + b·n + c·(n² + 2·n·m)   seconds, m tokens already in context
//                                (causal attention among the new tokens, and over the cached ones)
//   decode step of a batch        a + b·Σcontext + c·batch   seconds
//   retrieval fast tier → device  latency + bytes / rate     seconds
// Values; thread-safe as values.
#pragma once

#include <cstdint>
#include <string>

#include "tempokv/executor.h"
#include "tempokv/status.h"

namespace tempokv {

struct CostProfile {
  std::string name;                   // e.g. "h100-llama-3.1-8b"
  std::string model;                  // model name, for KV geometry and keys
  uint64_t kv_bytes_per_token = 0;    // layers × kv_heads × head_dim × 2 × dtype bytes
  double prefill_a_s = 0;             // fixed cost of a prefill
  double prefill_b_s_per_token = 0;   // linear term per new token
  double prefill_c_s_per_token2 = 0;  // quadratic (attention) term per new token squared
  double decode_a_s = 0;              // fixed cost of a decode step
  double decode_b_s_per_context_token = 0;  // KV read of the whole batch's context
  double decode_c_s_per_seq = 0;            // per sequence in the batch
  double retrieval_latency_s = 0;           // fixed cost of a fast tier → device retrieval
  double retrieval_bytes_per_s = 1;         // fast tier → device rate
  // GPU KV-cache capacity in tokens: the runtime admits a request only while the prompts of the
  // requests holding slots (with the tokens they generated) and its own fit. 0: unlimited.
  uint64_t kv_capacity_tokens = 0;

  Duration prefill(uint64_t new_tokens, uint64_t context_tokens = 0) const;
  Duration decode_step(uint64_t context_tokens, uint64_t batch) const;
  // Total time of `steps` consecutive decode steps of a fixed batch whose summed context starts
  // at context_tokens and grows by batch each step (closed form; what a projection jumps over).
  Duration decode_steps(uint64_t steps, uint64_t context_tokens, uint64_t batch) const;
  Duration retrieval(uint64_t bytes) const;
  // Every cost × factor (the retrieval rate ÷ factor): a deliberately wrong estimator's profile,
  // or an online calibration's correction. factor > 0.
  CostProfile scaled(double factor) const { return scaled(factor, factor); }
  // The decode step's costs × decode_factor, the rest (prefill, retrieval) × factor.
  CostProfile scaled(double factor, double decode_factor) const;
  // An estimator wrong by shape, for --estimator-error e in [0, 1): alternate terms × (1 + e)
  // and × (1 − e) (prefill a, c and decode b, retrieval latency up; prefill b, decode a and c
  // down; retrieval rate ÷ (1 + e)), so the error depends on the prompt, the context and the
  // batch and no single calibrated scale cancels it. e = 0 returns the profile unchanged.
  CostProfile perturbed(double e) const;

  Status validate() const;
  static Result<CostProfile> load(const std::string& path);
  static Result<CostProfile> parse(const std::string& json_text, const std::string& origin);
};

}  // namespace tempokv
