// The scenario runners of run_eval() (eval.h); one file per family. Internal to the eval library.
// Every runner appends its rows through the Runner and notes what it printed.
#pragma once

#include <string>
#include <vector>

#include "eval/runner.h"
#include "workload/request.h"

namespace tempokv {

Status run_fig4_policies(Runner& runner);
Status run_fig5_capacity(Runner& runner);
Status run_fig6_rate(Runner& runner);
Status run_trace(Runner& runner, EvalResult& result);
Status run_fig1_lead(Runner& runner);
Status run_fig2_rank(Runner& runner);
Status run_fleet(Runner& runner, EvalResult& result);  // scenario_fleet*.cc

// Shared by the scenarios: the mode's defaults on a stack (real mode: this machine's SSD rate
// for the TTR prior and the fixed-rate TTR, verified bytes) and the scaled fast tier.
struct ModeScale {
  std::vector<std::pair<std::string, std::string>> models;  // (model, profile name)
  double fast_tier_gib = 100;  // the paper's default tier (budget: half)
  double interval_s = 0.5;     // NarrativeQA arrival interval
  double rate_scale = 1;       // fig6 offered rates × this
};
ModeScale mode_scale(const Runner& runner);
// Sim with --truth hidden (EvalOptions::truth).
bool hidden_truth(const Runner& runner);
StackConfig base_stack(const Runner& runner, const CostProfile& profile, const std::string& policy,
                       double fast_tier_gib);
// The paper's NarrativeQA-like set for a profile and ratio (seeded by --seed). Hidden truth: 102
// documents (34 per length group) with lognormal outputs (median 64, log-σ 0.9) up to a
// generation limit of 256; the oracle: the paper's 12 with outputs uniform in 100-128.
Result<std::vector<Request>> narrativeqa_requests(const Runner& runner, const CostProfile& profile,
                                                  double ratio, double interval_s);
std::string ratio_label(double ratio);
// The output predictor's prior "from the same model-specific calibration" (paper §5.1): the mean
// true output length, capped at `limit`, of a calibration set drawn like the workload but with
// another seed (--seed + 1000). 0 when --predictor-prior limit asks for the generation limit.
// Hidden truth: a fixed guess of half the generation limit, which the predictor corrects online.
uint32_t calibrated_prior(const Runner& runner, const CostProfile& profile, uint32_t limit);

}  // namespace tempokv
