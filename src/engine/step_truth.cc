#include "engine/step_truth.h"

#include <algorithm>
#include <cmath>

#include "common/splitmix.h"

namespace tempokv {

Status StepTruthOptions::validate() const {
  auto bad = [](const char* what) {
    return Status::invalid_argument(std::string("StepTruthOptions.") + what);
  };
  if (!(fixed_factor > 0 && context_low > 0 && context_high > 0 && seq_factor > 0)) {
    return bad("fixed_factor, context_low, context_high and seq_factor must be > 0");
  }
  if (!(context_knee_tokens > 0)) return bad("context_knee_tokens must be > 0");
  if (prefill_chunk_tokens == 0) return bad("prefill_chunk_tokens must be >= 1");
  if (!(chunk_overhead >= 0)) return bad("chunk_overhead must be >= 0");
  if (!(kv_pressure > 0)) return bad("kv_pressure must be > 0");
  if (!(noise_sigma >= 0 && noise_sigma < 1)) return bad("noise_sigma must be in [0, 1)");
  if (!(tail_probability >= 0 && tail_probability <= 1)) {
    return bad("tail_probability must be in [0, 1]");
  }
  if (!(tail_alpha > 0 && tail_scale >= 0)) return bad("tail_alpha must be > 0, tail_scale >= 0");
  return Status::ok();
}

StepTruth::StepTruth(const CostProfile& profile, const StepTruthOptions& options,
                     double jitter_sigma, uint64_t seed)
    : profile_(profile),
      options_(options),
      jitter_(options.hidden ? options.noise_sigma : jitter_sigma, seed),
      state_(seed ^ 0x7461696cULL) {}

Duration StepTruth::noise(Duration d) {
  d = jitter_.apply(d);
  if (!options_.hidden || options_.tail_probability <= 0 || d <= Duration::zero()) return d;
  if (uniform01(state_) >= options_.tail_probability) return d;
  // Pareto(α) with minimum 1, minus 1: a stall of tail_scale × that much more.
  const double u = std::max(1e-12, 1.0 - uniform01(state_));
  const double pareto = std::pow(u, -1.0 / options_.tail_alpha) - 1.0;
  return from_seconds(to_seconds(d) * (1.0 + options_.tail_scale * pareto));
}

double StepTruth::hidden_prefill_s(uint64_t n, uint64_t m) const {
  const uint64_t chunk = options_.prefill_chunk_tokens;
  double s = profile_.prefill_a_s;
  for (uint64_t done = 0; done < n; done += chunk) {
    const double k = double(std::min(chunk, n - done));
    const double before = double(m + done);
    s += options_.chunk_overhead * profile_.prefill_a_s + profile_.prefill_b_s_per_token * k +
         profile_.prefill_c_s_per_token2 * (k * k + 2 * k * before);
  }
  return s;
}

Duration StepTruth::prefill(uint64_t new_tokens, uint64_t context_tokens) {
  if (!options_.hidden) return noise(profile_.prefill(new_tokens, context_tokens));
  return noise(from_seconds(hidden_prefill_s(new_tokens, context_tokens)));
}

Duration StepTruth::decode_step(uint64_t context_tokens, uint64_t batch) {
  if (!options_.hidden) return noise(profile_.decode_step(context_tokens, batch));
  const double ctx = double(context_tokens);
  const double u = std::min(1.0, ctx / options_.context_knee_tokens);
  const double per_token =
      profile_.decode_b_s_per_context_token *
      (options_.context_low + (options_.context_high - options_.context_low) * u);
  const double s = profile_.decode_a_s * options_.fixed_factor + per_token * ctx +
                   profile_.decode_c_s_per_seq * options_.seq_factor * double(batch);
  return noise(from_seconds(s));
}

bool StepTruth::under_pressure(uint64_t context_tokens) const {
  return options_.hidden && profile_.kv_capacity_tokens != 0 &&
         double(context_tokens) > options_.kv_pressure * double(profile_.kv_capacity_tokens);
}

}  // namespace tempokv
