// RuntimeAdapter's costs: the given profile's cost of an iteration, the online calibration of the
// cost scales from measured iterations, and the measured copy time of async loads
// (runtime_adapter.h).
#include <algorithm>
#include <cmath>

#include "adapter/runtime_adapter.h"
#include "common/percentile.h"

namespace tempokv {

IterationCost RuntimeAdapter::iteration_cost(std::span<const uint64_t> prefills,
                                             std::span<const uint32_t> prefill_tokens,
                                             std::span<const uint64_t> decoders) {
  IterationCost it;
  Duration& cost = it.prefill;
  for (size_t i = 0; i < prefills.size(); ++i) {
    const Req& r = *requests_.find(prefills[i]);
    const uint32_t done = r.info.cached_tokens + r.prefilled_tokens;
    const uint32_t left = r.info.prompt_tokens > done ? r.info.prompt_tokens - done : 0;
    const uint32_t chunk = i < prefill_tokens.size() ? prefill_tokens[i] : 0;
    // An async load's copy ran outside the iterations.
    if (r.has_claim && r.prefilled_tokens == 0 && !options_.async_loads) {
      cost += profile_.retrieval(r.info.cached_bytes);
    }
    const uint32_t n = std::max<uint32_t>(1, chunk > 0 ? std::min(chunk, left) : left);
    cost += profile_.prefill(n, std::min(done, r.info.prompt_tokens - n));
  }
  uint64_t context = 0;
  for (uint64_t id : decoders) {
    const Req& r = *requests_.find(id);
    context += r.info.prompt_tokens + r.generated;
  }
  if (!decoders.empty()) it.decode = profile_.decode_step(context, decoders.size());
  return it;
}

Status RuntimeAdapter::preempted(uint64_t id) {
  TEMPOKV_ASSIGN_OR_RETURN(Req * r, find(id, "preempted"));
  if (r->phase != Phase::kRunning || !r->decode_in_iteration || !iteration_open_) {
    return Status::failed_precondition("preempted: request " + std::to_string(id) +
                                       " does not decode in a running iteration");
  }
  const uint64_t context = r->info.prompt_tokens + r->generated;
  iteration_cost_.prefill += profile_.prefill(context, 0);
  r->preempted = true;
  uint64_t batch_context = 0;
  for (uint64_t d : running_) {
    const Req& q = *requests_.find(d);
    if (q.decode_in_iteration) batch_context += q.info.prompt_tokens + q.generated;
  }
  // The line lies below every context the runtime preempted at (a deterministic rule, such as
  // running out of KV blocks); a context it did not preempt at says nothing, as each decoder is
  // preempted once per episode of pressure.
  const uint64_t line = estimator_.preemption_line();
  if (batch_context > 0 && (line == 0 || batch_context - 1 < line)) {
    estimator_.set_preemption_line(batch_context - 1);
  }
  return Status::ok();
}

void RuntimeAdapter::iteration_ended() {
  if (!iteration_open_) return;
  iteration_open_ = false;
  if (!runtime_measures_) calibrate(iteration_cost_, controller_.now() - iteration_start_);
}

void RuntimeAdapter::iteration_measured(IterationCost profile_cost, Duration actual) {
  runtime_measures_ = true;
  calibrate(profile_cost, actual);
}

void RuntimeAdapter::Scale::update(double log_ratio, double weight, bool clamp_first) {
  const double log4 = std::log(4.0);
  ++n;
  const double step = n == 1 && !clamp_first ? log_ratio
                                             : std::clamp(log_ratio, log - log4, log + log4);
  log += std::max(weight, 1.0 / double(n)) * (step - log);
  value = std::exp(log);
}

void RuntimeAdapter::calibrate(IterationCost cost, Duration actual) {
  if (options_.calibration_weight == 0 || cost.total() <= Duration::zero() ||
      actual <= Duration::zero()) {
    return;
  }
  // One measurement may move the scale at most 4x from where it is (an outlier, a stall), but
  // repeated ones take it anywhere: a profile of another machine (cpu-small against vLLM's CPU
  // backend) is 30-300x off, and a clamp around the profile's own cost capped the scale at 4.
  // The first measurements are averaged rather than weighted against the profile (a
  // bias-corrected EWMA: the weight of the n-th is max(w, 1/n), the first sets the scale), so a
  // fresh adapter does not project with the profile's costs for the ~20 steps an EWMA from the
  // profile would take to get within 10 % of a 17x slower runtime (vLLM on CPU: its first
  // claims' uses were projected ~1.7 s early).
  const double w = options_.calibration_weight;
  if (!runtime_measures_) {
    // Timed by the adapter's own clock, an iteration also holds message delays and the idle
    // gaps where the runtime waits for KV; split between the two scales they went to the
    // prefills (the sim trace's p95 went 1.063 -> 1.089 x Immediate's): one scale.
    prefill_scale_.update(std::log(double(actual.count()) / double(cost.total().count())), w);
    decode_scale_ = prefill_scale_;
  } else if (cost.prefill <= Duration::zero()) {
    // Its first measurement replaces the prefill scale it followed, within 4x of it (an
    // outlier, a stall, is no fresher than the prefills measured before it).
    decode_scale_.update(std::log(double(actual.count()) / double(cost.decode.count())), w,
                         prefill_scale_.n > 0);
  } else {
    // The prefills' share: what the decode step at its scale leaves (at least a quarter of the
    // measurement); before the decode step has its own scale, the whole iteration at one.
    double rest = double(actual.count());
    double base = double(cost.total().count());
    if (decode_scale_.n > 0) {
      rest = std::max(rest - double(cost.decode.count()) * decode_scale_.value, rest / 4);
      base = double(cost.prefill.count());
    }
    prefill_scale_.update(std::log(rest / base), w);
    if (decode_scale_.n == 0) {
      decode_scale_.log = prefill_scale_.log;
      decode_scale_.value = prefill_scale_.value;
    }
  }
  calibrated_ = profile_.scaled(prefill_scale_.value, decode_scale_.value);
  ++iterations_calibrated_;
}

void RuntimeAdapter::record_load(Duration profile_cost, Duration actual) {
  if (profile_cost <= Duration::zero() || actual <= Duration::zero()) return;
  const double ratio = double(actual.count()) / double(profile_cost.count());
  if (load_ratios_.size() < kLoadSamples) {
    load_ratios_.push_back(ratio);
  } else {
    load_ratios_[load_next_] = ratio;
    load_next_ = (load_next_ + 1) % kLoadSamples;
  }
  load_scale_ = percentile(load_ratios_, 0.5);  // a stalled copy (a GIL stall) moves it little
}

Duration RuntimeAdapter::load_time(uint64_t bytes) const {
  if (load_scale_ == 0) return calibrated_.retrieval(bytes);
  return Duration(std::llround(double(profile_.retrieval(bytes).count()) * load_scale_));
}

Duration RuntimeAdapter::loaded_in(uint64_t id, const Req& r, bool ask_ready) const {
  if (claim_ended(id)) return Duration::zero();  // copied (or failed: the runtime computes it)
  const Duration copy = load_time(r.info.cached_bytes);
  if (r.transfer_began) {
    return std::max(Duration::zero(), *r.transfer_began + copy - controller_.now());
  }
  return (ask_ready ? ready_in(id) : Duration::zero()) + copy;
}

}  // namespace tempokv
