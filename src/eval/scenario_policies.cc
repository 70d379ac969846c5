// fig4-policies, fig5-capacity and fig6-rate: the NarrativeQA-like set under every policy
// (paper §5.1-§5.3).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/units.h"
#include "controller/controller.h"
#include "eval/scenarios.h"
#include "workload/narrativeqa.h"

namespace tempokv {

ModeScale mode_scale(const Runner& runner) {
  ModeScale s;
  if (runner.sim()) {
    s.models = {{"llama-3.1-8b", "h100-llama-3.1-8b"}, {"qwen2.5-14b", "h100-qwen2.5-14b"}};
    return s;
  }
  // This machine: the cpu-small profile (4 KiB of KV per token, 1/32 of Llama's; compute 4×
  // faster than Llama on an H100), so the tier shrinks by 32 and arrivals come 4× as often.
  s.models = {{"cpu-small", "cpu-small"}};
  s.fast_tier_gib = 100.0 / 32;
  s.interval_s = 0.5 / 4;
  s.rate_scale = 4;
  return s;
}

StackConfig base_stack(const Runner& runner, const CostProfile& profile, const std::string& policy,
                       double fast_tier_gib) {
  StackConfig c;
  c.policy = policy;
  c.profile = profile;
  c.fast_tier_bytes = static_cast<uint64_t>(fast_tier_gib * double(kGiB));
  c.budget_bytes = c.fast_tier_bytes / 2;
  c.seed = runner.options().seed;
  c.estimator_bias = runner.options().estimator_bias;
  c.wait_order_statistics =
      runner.options().wait_order_statistics.value_or(projects_order_statistics(policy));
  c.error_feedback = runner.options().error_feedback;  // make_controller() clears it by policy
  c.feedback_quantile = runner.options().feedback_quantile;
  c.ttu_horizon = runner.options().ttu_horizon;
  c.rhythm_horizon = runner.options().rhythm_horizon;
  c.issue_order = runner.options().issue_order;
  c.remote_prefetch = runner.options().remote_prefetch;
  if (runner.options().jitter_sigma) c.jitter_sigma = *runner.options().jitter_sigma;
  if (runner.options().engines) c.engines = runner.options().engines;
  if (hidden_truth(runner)) {
    c.truth.hidden = true;
    c.truth.admit_by_line = runner.options().admit_by_line;
    // The provider is told the paper's testbed (11 GiB/s, 16 reads) and writes as dear as reads;
    // the device is another (Runner::storage_for): its read and write rates it learns from
    // completions (the fixed rate of tempokv-no-state-ttr stays the told one).
    c.write_cost = 1.0;
  }
  const double e = runner.options().estimator_error;
  c.estimator_error = e;
  c.prior_read_bytes_per_s *= 1 + e;
  c.static_read_bytes_per_s *= 1 + e;
  if (!runner.sim()) {
    c.prior_read_bytes_per_s = Runner::kRealSsdBytesPerS * (1 + e);
    c.static_read_bytes_per_s = Runner::kRealSsdBytesPerS * (1 + e);
    c.verify_bytes = true;
  }
  return c;
}

Result<std::vector<Request>> narrativeqa_requests(const Runner& runner, const CostProfile& profile,
                                                  double ratio, double interval_s) {
  NarrativeQaOptions o;
  o.seed = runner.options().seed;
  o.model = profile.model;
  o.kv_bytes_per_token = profile.kv_bytes_per_token;
  o.cache_ratio = ratio;
  o.interval = from_seconds(interval_s);
  if (hidden_truth(runner)) {
    o.docs_per_group = 34;
    o.max_output_tokens = 256;
    o.output_log_sigma = 0.9;
    o.output_median_tokens = 64;
  }
  TEMPOKV_ASSIGN_OR_RETURN(std::vector<Request> requests, make_narrativeqa(o));
  const uint32_t max = runner.options().max_requests;
  if (max != 0 && requests.size() > max) requests.resize(max);
  return requests;
}

std::string ratio_label(double ratio) {
  char b[16];
  std::snprintf(b, sizeof b, "%g%%", ratio * 100);
  return b;
}

bool hidden_truth(const Runner& runner) {
  return runner.sim() && runner.options().truth == "hidden";
}

uint32_t calibrated_prior(const Runner& runner, const CostProfile& profile, uint32_t limit) {
  if (!runner.options().calibrated_prior) return limit;
  if (hidden_truth(runner)) return 128;
  NarrativeQaOptions o;
  o.seed = runner.options().seed + 1000;
  o.model = profile.model;
  o.kv_bytes_per_token = profile.kv_bytes_per_token;
  Result<std::vector<Request>> cal = make_narrativeqa(o);
  if (!cal.is_ok() || cal->empty()) return limit;
  double sum = 0;
  for (const Request& r : *cal) sum += std::min(r.output_tokens, limit);
  return std::max<uint32_t>(1, static_cast<uint32_t>(std::lround(sum / double(cal->size()))));
}

namespace {

// A run of the NarrativeQA-like set under one policy: the row's identity, the stack and the
// calibrated output prior every policy scenario shares.
RunSpec policy_run(const Runner& runner, const CostProfile& profile, std::string label,
                   const char* scenario, const std::string& policy, const std::string& model,
                   double ratio, double rate, double tier_gib, uint32_t prior_limit,
                   const std::vector<Request>& requests) {
  RunSpec spec;
  spec.label = std::move(label);
  spec.row.scenario = scenario;
  spec.row.policy = policy;
  spec.row.model = model;
  spec.row.ratio = ratio;
  spec.row.rate = rate;
  spec.stack = base_stack(runner, profile, policy, tier_gib);
  spec.stack.prior_output_tokens = calibrated_prior(runner, profile, prior_limit);
  spec.requests = requests;
  return spec;
}

std::vector<double> fig4_ratios(const Runner& runner) {
  std::vector<double> r = runner.options().ratios;
  if (r.empty()) r = {0.5, 0.75, 1.0};
  // Real mode shares one store: ascending ratios only add chunks to it.
  std::sort(r.begin(), r.end());
  return r;
}

bool wanted_model(const Runner& runner, const std::string& model) {
  const auto& m = runner.options().models;
  return m.empty() || std::find(m.begin(), m.end(), model) != m.end();
}

}  // namespace

Status run_fig4_policies(Runner& runner) {
  const ModeScale scale = mode_scale(runner);
  const double tier = runner.options().fast_tier_gib.value_or(scale.fast_tier_gib);
  for (const auto& [model, profile_name] : scale.models) {
    if (!wanted_model(runner, model)) continue;
    TEMPOKV_ASSIGN_OR_RETURN(CostProfile profile, runner.profile(profile_name));
    for (double ratio : fig4_ratios(runner)) {
      TEMPOKV_ASSIGN_OR_RETURN(auto requests,
                               narrativeqa_requests(runner, profile, ratio, scale.interval_s));
      for (const std::string& policy : runner.policies({std::begin(kAllPolicies),
                                                        std::end(kAllPolicies)})) {
        RunSpec spec = policy_run(runner, profile,
                                  "fig4 " + model + " " + ratio_label(ratio) + " " + policy,
                                  "fig4-policies", policy, model, ratio, 1.0 / scale.interval_s,
                                  tier, 128, requests);
        TEMPOKV_RETURN_IF_ERROR(runner.run(std::move(spec)).status());
      }
    }
  }
  return Status::ok();
}

Status run_fig5_capacity(Runner& runner) {
  const ModeScale scale = mode_scale(runner);
  const auto& [model, profile_name] = scale.models.front();
  TEMPOKV_ASSIGN_OR_RETURN(CostProfile profile, runner.profile(profile_name));
  TEMPOKV_ASSIGN_OR_RETURN(auto requests,
                           narrativeqa_requests(runner, profile, 1.0, scale.interval_s));
  const uint32_t prior_limit = 128;
  for (double fraction : {1.0, 0.5, 0.25}) {
    const double tier = scale.fast_tier_gib * fraction;
    for (const std::string& policy :
         runner.policies({std::begin(kAllPolicies), std::end(kAllPolicies)})) {
      char tier_label[32];
      std::snprintf(tier_label, sizeof tier_label, "%g GiB", tier);
      RunSpec spec = policy_run(runner, profile, std::string("fig5 ") + tier_label + " " + policy,
                                "fig5-capacity", policy, model, 1.0, 1.0 / scale.interval_s,
                                tier, prior_limit, requests);
      TEMPOKV_RETURN_IF_ERROR(runner.run(std::move(spec)).status());
    }
  }
  return Status::ok();
}

Status run_fig6_rate(Runner& runner) {
  const ModeScale scale = mode_scale(runner);
  const double tier = runner.options().fast_tier_gib.value_or(scale.fast_tier_gib);
  const auto& [model, profile_name] = scale.models.front();
  TEMPOKV_ASSIGN_OR_RETURN(CostProfile profile, runner.profile(profile_name));
  // 16 contexts sampled (seeded) from the set: six per length group, shuffled, the first 16.
  NarrativeQaOptions o;
  o.seed = runner.options().seed;
  o.model = profile.model;
  o.kv_bytes_per_token = profile.kv_bytes_per_token;
  o.cache_ratio = 1.0;
  o.docs_per_group = 6;
  TEMPOKV_ASSIGN_OR_RETURN(auto all, make_narrativeqa(o));
  all.resize(16);
  const uint32_t prior_limit = 32;  // §5.3: generation capped at 32 tokens
  for (Request& r : all) r.max_output_tokens = prior_limit;
  for (double base_rate : {0.2, 0.5, 1.0, 2.0, 4.0}) {
    const double rate = base_rate * scale.rate_scale;
    std::vector<Request> requests = all;
    for (size_t i = 0; i < requests.size(); ++i) {
      requests[i].arrival = from_seconds(double(i) / rate);
    }
    for (const std::string& policy : runner.policies({"tempokv", "lmcache-dax"})) {
      char rate_label[32];
      std::snprintf(rate_label, sizeof rate_label, "r=%g", rate);
      RunSpec spec = policy_run(runner, profile, std::string("fig6 ") + rate_label + " " + policy,
                                "fig6-rate", policy, model, 1.0, rate, tier, prior_limit,
                                requests);
      TEMPOKV_RETURN_IF_ERROR(runner.run(std::move(spec)).status());
    }
  }
  return Status::ok();
}

}  // namespace tempokv
