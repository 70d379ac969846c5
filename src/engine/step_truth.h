// StepTruth: what an emulated engine's compute really costs, as opposed to what its runtime
// adapter estimates. Two models:
//
//  * Oracle: the CostProfile's costs × a lognormal jitter (StepJitter, σ = jitter_sigma). The
//    adapter projects with the same profile, so only the jitter separates estimate from truth.
//  * Hidden (StepTruthOptions::hidden): costs of another shape, which no scale of the profile
//    reproduces, so the adapter's online calibration can only approach them:
//      - decode step: decode_a × fixed_factor + b × Σcontext × (low + (high − low) × u) +
//        c × batch × seq_factor, u = min(1, Σcontext / context_knee): cheaper per context token
//        than the profile for small batches' contexts, dearer for large ones (cache misses);
//      - prefill is chunked: n new tokens run as ⌈n / chunk⌉ chunks, each paying
//        chunk_overhead × prefill_a besides its tokens and its attention over everything before
//        it (the profile charges one fixed cost);
//      - KV pressure: when a decode batch's context exceeds kv_pressure × the profile's KV
//        capacity, the youngest decoder not yet preempted is preempted and its context
//        recomputed inside the step (one prefill of its context), once per episode of pressure;
//        the engine admits up to the whole capacity, or up to the line (admit_by_line);
//      - noise: a lognormal factor (σ = noise_sigma), and with probability tail_probability a
//        stall factor 1 + Pareto(tail_alpha) × tail_scale (a heavy tail).
// Both draw from one seeded stream, so a run repeats exactly for a seed. Not thread-safe; one per
// engine.
#pragma once

#include <cstdint>

#include "adapter/cost_profile.h"
#include "engine/step_jitter.h"
#include "tempokv/executor.h"

namespace tempokv {

struct StepTruthOptions {
  bool hidden = false;
  double fixed_factor = 1.15;       // decode_a × this
  double context_low = 0.8;         // decode_b factor at no context
  double context_high = 1.25;       // decode_b factor at context_knee and above
  double context_knee_tokens = 200000;
  double seq_factor = 0.7;          // decode_c × this
  uint32_t prefill_chunk_tokens = 2048;
  double chunk_overhead = 0.3;      // each chunk pays prefill_a × this besides the one prefill_a
  double kv_pressure = 0.85;        // preemption above this fraction of kv_capacity_tokens
  // The engine admits a request only while the running contexts and its prompt stay at or below
  // that line (as vLLM's scheduler admits against its real free blocks); false: up to the
  // profile's whole KV capacity, past the line, which the preemptions then pay for.
  bool admit_by_line = false;
  double noise_sigma = 0.08;
  double tail_probability = 0.02;
  double tail_alpha = 2.0;
  double tail_scale = 0.5;
  Status validate() const;
};

class StepTruth {
 public:
  // jitter_sigma: the oracle's lognormal σ (unused when hidden).
  StepTruth(const CostProfile& profile, const StepTruthOptions& options, double jitter_sigma,
            uint64_t seed);

  // One prefill of n new tokens after m cached, noise included.
  Duration prefill(uint64_t new_tokens, uint64_t context_tokens);
  // One decode step of `batch` sequences with the given summed context, noise included.
  Duration decode_step(uint64_t context_tokens, uint64_t batch);
  // Hidden truth: whether a decode batch of this summed context is under KV pressure (a
  // preemption and recompute happens in the step). Always false for the oracle.
  bool under_pressure(uint64_t context_tokens) const;
  // Hidden truth with admit_by_line: the engine admits only while under_pressure() stays false
  // (ServingEngine::kv_fits); otherwise up to the profile's KV capacity.
  bool admits_by_line() const { return options_.hidden && options_.admit_by_line; }
  // The recompute of a preempted sequence's context (noise included; hidden truth only).
  Duration recompute(uint64_t context_tokens) { return prefill(context_tokens, 0); }
  bool hidden() const { return options_.hidden; }

 private:
  Duration noise(Duration d);
  double hidden_prefill_s(uint64_t n, uint64_t m) const;

  CostProfile profile_;
  StepTruthOptions options_;
  StepJitter jitter_;  // the oracle's jitter; the hidden noise's normal draws
  uint64_t state_;     // the hidden tail's uniform draws
};

}  // namespace tempokv
