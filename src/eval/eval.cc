#include "eval/eval.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "controller/controller.h"
#include "eval/runner.h"
#include "eval/scenarios.h"

namespace tempokv {

double EvalRow::get(const std::string& name) const {
  for (const auto& [k, v] : extra) {
    if (k == name) return v;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

std::vector<std::string> eval_scenarios() {
  return {"fig4-policies", "fig5-capacity", "fig6-rate", "trace",
          "fig1-lead",     "fig2-rank",     "fleet"};
}

namespace {

// Service mode runs what a runtime can do through the protocol: the policy scenarios, with
// claims, on this machine.
Status validate_service_options(const EvalOptions& o) {
  if (o.mode != EvalMode::kReal) {
    return Status::invalid_argument(
        "--via-service runs real mode only: simulated time cannot pass through a daemon");
  }
  if (o.scenario != "fig4-policies" && o.scenario != "fig5-capacity" && o.scenario != "fig6-rate" &&
      o.scenario != "fleet") {
    return Status::invalid_argument(
        "--via-service runs fig4-policies, fig5-capacity, "
        "fig6-rate and fleet; " +
        o.scenario + " reaches into the in-process stack");
  }
  const bool lmcache =
      std::find(o.policies.begin(), o.policies.end(), "lmcache-dax") != o.policies.end();
  // fig6-rate's default policies include lmcache-dax.
  if (lmcache || (o.policies.empty() && o.scenario == "fig6-rate")) {
    return Status::invalid_argument(
        "--via-service: policy lmcache-dax runs baseline engines without claims, which the "
        "service does not serve; pass --policies without it");
  }
  return Status::ok();
}

}  // namespace

Status validate_eval_options(const EvalOptions& o) {
  auto names = eval_scenarios();
  if (std::find(names.begin(), names.end(), o.scenario) == names.end()) {
    std::string all;
    for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
    return Status::invalid_argument("--scenario '" + o.scenario + "' is not one of " + all);
  }
  for (const std::string& p : o.policies) {
    if (p != "lmcache-dax" && !is_controller_configuration(p)) {
      return Status::invalid_argument("--policies: '" + p + "' is not one of " +
                                      controller_configuration_names() + ", lmcache-dax");
    }
  }
  for (double r : o.ratios) {
    if (!(r > 0 && r <= 1)) return Status::invalid_argument("--ratios must be in (0, 1]");
  }
  if (o.mode == EvalMode::kReal && o.dir.empty()) {
    return Status::invalid_argument("--dir is required in real mode");
  }
  if (!o.tempokvd.empty()) TEMPOKV_RETURN_IF_ERROR(validate_service_options(o));
  if (!(o.time_scale > 0)) return Status::invalid_argument("--time-scale must be > 0");
  if (o.window_s && !(*o.window_s > 0)) return Status::invalid_argument("--window-s must be > 0");
  if (!(o.estimator_bias > -0.9 && o.estimator_bias < 10)) {
    return Status::invalid_argument("--estimator-bias must be in (-0.9, 10)");
  }
  if (o.truth != "hidden" && o.truth != "oracle") {
    return Status::invalid_argument("--truth must be hidden or oracle, not '" + o.truth + "'");
  }
  if (!(o.estimator_error >= 0 && o.estimator_error < 0.9)) {
    return Status::invalid_argument("--estimator-error must be in [0, 0.9)");
  }
  if (!(o.device_speedup > 0 && o.device_speedup <= 1e6)) {
    return Status::invalid_argument("--device-speedup must be in (0, 1e6]");
  }
  if (o.device_stalls && !(*o.device_stalls >= 0 && *o.device_stalls < 1)) {
    return Status::invalid_argument("--device-stalls must be in [0, 1)");
  }
  if ((o.device_speedup != 1 || o.device_stalls || o.admit_by_line) &&
      (o.mode != EvalMode::kSim || o.truth != "hidden")) {
    return Status::invalid_argument(
        "--device-speedup, --device-stalls and --admit-by-line change the hidden truth: they need "
        "--mode sim and --truth hidden");
  }
  if (o.seeds == 0 || o.seeds > 100) return Status::invalid_argument("--seeds must be in 1..100");
  if (o.fast_tier_gib && !(*o.fast_tier_gib > 0)) {
    return Status::invalid_argument("--fast-tier-gib must be > 0");
  }
  return Status::ok();
}

Result<EvalResult> run_eval(const EvalOptions& options) {
  TEMPOKV_RETURN_IF_ERROR(validate_eval_options(options));
  EvalResult result;
  Status st;
  {
    Runner runner(options, result);
    const std::string& s = options.scenario;
    if (s == "fig4-policies") st = run_fig4_policies(runner);
    if (s == "fig5-capacity") st = run_fig5_capacity(runner);
    if (s == "fig6-rate") st = run_fig6_rate(runner);
    if (s == "trace") st = run_trace(runner, result);
    if (s == "fig1-lead") st = run_fig1_lead(runner);
    if (s == "fig2-rank") st = run_fig2_rank(runner);
    if (s == "fleet") st = run_fleet(runner, result);
    Status closed = runner.finish();
    if (st.is_ok()) st = closed;
  }
  if (!st.is_ok()) return st;
  return result;
}

}  // namespace tempokv
