// `tempokv eval`: runs a scenario of the evaluation (src/eval, docs/evaluation.md), prints its
// table and comparisons, writes the JSON rows and per-request CSV, and draws the figures.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "eval/eval.h"
#include "eval/report.h"
#include "eval_paths.h"
#include "eval_vllm.h"
#include "tempokv/commands.h"
#include "tempokv/progress.h"

namespace tempokv::cli {
namespace {

// A progress bar per run that appears only once the run has taken a couple of seconds.
class EvalProgress {
 public:
  void update(const std::string& label, uint64_t done, uint64_t total) {
    auto now = std::chrono::steady_clock::now();
    if (label != label_) {
      bar_.reset();
      label_ = label;
      since_ = now;
    }
    if (!bar_ && now - since_ < std::chrono::seconds(2)) return;
    if (!bar_) bar_ = std::make_unique<ProgressBar>(label, total);
    bar_->update(done);
  }
  void clear() { bar_.reset(); }

 private:
  std::string label_;
  std::chrono::steady_clock::time_point since_{};
  std::unique_ptr<ProgressBar> bar_;
};

struct EvalCli {
  EvalOptions options;
  std::string mode = "sim";
  std::string out_dir;
  std::string json_path;
  bool plots = false;
  bool quiet = false;
  bool via_service = false;
  std::string tempokvd;  // --tempokvd: another daemon binary (implies --via-service)
  std::optional<double> fast_tier_gib, jitter, window_s;
  std::optional<double> read_bytes_per_s, interval_s;  // vllm only
  std::optional<uint32_t> requests;                    // vllm only
};

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int run_vllm(const EvalCli& c, bool seed_set) {
  VllmEvalArgs a;
  a.scenario = c.options.scenario;
  a.policies = c.options.policies;
  a.ratios = c.options.ratios;
  a.seeds = c.options.seeds;
  if (seed_set) a.seed = c.options.seed;
  a.read_bytes_per_s = c.read_bytes_per_s;
  a.interval_s = c.interval_s;
  a.requests = c.requests;
  a.repeats = c.options.repeats;
  a.json_path = c.json_path;
  a.out_dir = c.out_dir;
  a.plots = c.plots;
  a.repo_root = find_repo_root();
  std::error_code ec;
  const std::filesystem::path beside =
      std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "tempokvd";
  a.tempokvd = !c.tempokvd.empty() ? c.tempokvd : beside.string();
  return run_vllm_eval(a);
}

int run(EvalCli& c, bool seed_set) {
  EvalOptions& o = c.options;
  if (c.mode == "vllm") return run_vllm(c, seed_set);
  if (c.mode != "sim" && c.mode != "real") {
    std::cerr << "eval: --mode must be sim, real or vllm (got '" << c.mode << "')\n";
    return 2;
  }
  if (c.requests && o.scenario == "fleet") {
    o.max_requests = *c.requests;  // fleet: the first N requests of the workload
  } else if (c.read_bytes_per_s || c.interval_s || c.requests) {
    std::cerr << "eval: --read-bytes-per-s, --interval-s and --requests are for --mode vllm "
                 "(--requests also for --scenario fleet)\n";
    return 2;
  }
  o.mode = c.mode == "sim" ? EvalMode::kSim : EvalMode::kReal;
  o.fast_tier_gib = c.fast_tier_gib;
  o.jitter_sigma = c.jitter;
  o.window_s = c.window_s;
  const std::string root = find_repo_root();
  if (o.profiles_dir.empty()) {
    if (root.empty()) {
      std::cerr << "eval: cannot find profiles/ beside the executable or the source tree; pass "
                   "--profiles DIR\n";
      return 2;
    }
    o.profiles_dir = root + "/profiles";
  }
  if (o.trace_path.empty() && !root.empty()) {
    o.trace_path = root + "/../shared/traces/mooncake_conversation_trace.jsonl";
  }
  if (o.mode == EvalMode::kReal && o.dir.empty()) o.dir = "/var/tmp/tempokv-eval";
  // The real fleet runs a tempokvd per engine and starts its cluster with scripts/cluster.
  const bool real_fleet = o.mode == EvalMode::kReal && o.scenario == "fleet";
  if (real_fleet && !root.empty()) o.cluster_script = root + "/scripts/cluster";
  if (c.via_service || !c.tempokvd.empty() || real_fleet) {
    std::error_code ec;
    // The daemon built with this binary: tempokvd in the same build directory.
    o.tempokvd =
        !c.tempokvd.empty()
            ? c.tempokvd
            : (std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "tempokvd")
                  .string();
    if (!std::filesystem::exists(o.tempokvd, ec)) {
      std::cerr << "eval: --via-service: no tempokvd at " << o.tempokvd
                << " (build it: ninja tempokvd; or pass --tempokvd PATH)\n";
      return 2;
    }
  }
  auto progress = std::make_shared<EvalProgress>();
  if (!c.quiet) {
    o.progress = [progress](const std::string& label, uint64_t done, uint64_t total) {
      progress->update(label, done, total);
    };
  }
  o.log = [progress](const std::string& line) {
    progress->clear();
    std::cout << line << std::endl;
  };

  std::cout << "tempokv eval --scenario " << o.scenario << " --mode " << c.mode;
  if (!o.tempokvd.empty()) std::cout << " --via-service (" << o.tempokvd << ")";
  std::cout << "\n";
  Result<EvalResult> r = run_eval_seeds(o);
  progress->clear();
  if (!r.is_ok()) {
    std::cerr << "eval: " << r.status().to_string() << "\n";
    return 1;
  }
  if (r->skipped) return 0;
  std::cout << "\n" << format_eval_table(*r);
  const std::string summary = format_eval_summary(*r);
  if (!summary.empty()) std::cout << "\n" << summary;

  if (!c.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(c.out_dir, ec);
    if (c.json_path.empty()) c.json_path = c.out_dir + "/eval-" + o.scenario + ".json";
    const std::string csv = c.out_dir + "/requests-" + o.scenario + ".csv";
    if (Status st = write_requests_csv(*r, csv); !st.is_ok()) {
      std::cerr << "eval: " << st.to_string() << "\n";
      return 1;
    }
    std::cout << "CSV: " << csv << "\n";
  }
  if (!c.json_path.empty()) {
    if (Status st = write_rows_json(*r, c.json_path); !st.is_ok()) {
      std::cerr << "eval: " << st.to_string() << "\n";
      return 1;
    }
    std::cout << "JSON: " << c.json_path << "\n";
  }
  if (c.plots) {
    if (c.json_path.empty() || root.empty()) {
      std::cerr << "eval: --plots needs --out or --json, and scripts/plot in the source tree\n";
      return 1;
    }
    std::string dir = c.out_dir.empty()
                          ? std::filesystem::path(c.json_path).parent_path().string()
                          : c.out_dir;
    if (dir.empty()) dir = ".";
    const std::string cmd = "/usr/bin/python3 " + shell_quote(root + "/scripts/plot") + " " +
                            shell_quote(dir) + " " + shell_quote(c.json_path);
    if (std::system(cmd.c_str()) != 0) {
      std::cerr << "eval: scripts/plot failed (needs python3-matplotlib: scripts/install-deps)\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace

void add_eval_command(CLI::App& app, int* exit_code) {
  auto c = std::make_shared<EvalCli>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Run an evaluation scenario (the paper's figures, the Mooncake trace) in sim or "
              "real mode");
  cmd->add_option("--mode", c->mode,
                  "sim (paper testbed, virtual time), real (this machine) or vllm (a real vLLM "
                  "on this machine: fig4-policies, fig6-rate; python -m tempokv.experiment)")
      ->capture_default_str();
  cmd->add_option("--scenario", c->options.scenario,
                  "fig4-policies, fig5-capacity, fig6-rate, trace, fig1-lead, fig2-rank, fleet")
      ->required();
  cmd->add_option("--policies", c->options.policies,
                  "Comma list of demand, immediate, queue-K, tempokv, tempokv-progressive, "
                  "tempokv-commit-order, lmcache-dax, and TempoKV with one mechanism off: "
                  "tempokv-static (error feedback), tempokv-no-wait (commit wait), "
                  "tempokv-no-chain (chained deadlines), tempokv-no-order-stats (order "
                  "statistics), tempokv-no-state-ttr (a fixed-rate TTR) (default: the scenario's)")
      ->delimiter(',');
  cmd->add_option("--models", c->options.models, "fig4: llama-3.1-8b, qwen2.5-14b")
      ->delimiter(',');
  cmd->add_option("--ratios", c->options.ratios, "fig4: prefix cache ratios (0.5,0.75,1.0)")
      ->delimiter(',');
  cmd->add_option("--read-bytes-per-s", c->read_bytes_per_s,
                  "vllm: tempokvd's SSD read cap in bytes/s (0: none; default: set from the "
                  "engine's measured decode step)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--interval-s", c->interval_s,
                  "vllm, fig4: arrival interval in seconds (default: by ratio, from the engine's "
                  "measured speed and the protocol's offered load)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--requests", c->requests,
                  "vllm: requests per run (default 12, as the paper's); fleet: the first N "
                  "requests")
      ->check(CLI::Range(1u, 100000u));
  cmd->add_option("--out", c->out_dir, "Write eval-<scenario>.json and requests-<scenario>.csv here");
  cmd->add_option("--json", c->json_path, "Write the JSON rows to this file");
  cmd->add_flag("--plots", c->plots, "Draw the figures with scripts/plot into --out");
  CLI::Option* seed =
      cmd->add_option("--seed", c->options.seed, "Workload and jitter seed")->capture_default_str();
  cmd->add_option("--seeds", c->options.seeds,
                  "Run seeds 1..N and report each configuration's mean and 95 % interval "
                  "(*_mean, *_ci95 fields)")
      ->check(CLI::Range(1u, 100u));
  cmd->add_option("--estimator-bias", c->options.estimator_bias,
                  "The adapter's cost profile is the engine's x (1 + F), e.g. 0.2 or -0.2")
      ->capture_default_str();
  cmd->add_option("--estimator-error", c->options.estimator_error,
                  "Estimators wrong by shape: the adapter's profile terms x (1 +/- E) alternately "
                  "(CostProfile::perturbed), the provider's prior and tempokv-no-state-ttr's rate x "
                  "(1 + E); e.g. 0.3")
      ->capture_default_str();
  cmd->add_option("--device-speedup", c->options.device_speedup,
                  "sim, hidden truth: the simulated SSD F times faster (read and write rates x F, "
                  "latency / F; the provider is still told the testbed's): e.g. 1000 for a device "
                  "that reads at almost no cost, the bound of any staging schedule")
      ->capture_default_str();
  cmd->add_option("--device-stalls", c->options.device_stalls,
                  "sim, hidden truth: the probability of a stall (40 x the latency) per read "
                  "(default 0.02)");
  cmd->add_flag("--admit-by-line", c->options.admit_by_line,
                "sim, hidden truth: the engines admit only up to their KV pressure line, as vLLM's "
                "scheduler admits against its real free blocks (default: up to the profile's "
                "capacity, past the line, and the preemptions pay for it)");
  cmd->add_option("--truth", c->options.truth,
                  "sim: hidden (the engine, SSD and outputs follow models the estimators do not "
                  "see; default) or oracle (the estimators' own models are the truth)")
      ->capture_default_str();
  cmd->add_option("--wait-order-statistics", c->options.wait_order_statistics,
                  "on/off for every policy: TTU lets the running requests complete at the expected "
                  "order statistics of their remaining outputs, not at their means "
                  "(AdapterOptions::wait_order_statistics; default: on for TempoKV's "
                  "configurations but tempokv-no-order-stats)");
  cmd->add_flag("!--no-error-feedback", c->options.error_feedback,
                "Every TempoKV configuration without the controller's error feedback");
  cmd->add_option("--feedback-quantile", c->options.feedback_quantile,
                  "TempoKV's error feedback weighs a late claim q/(1 - q) times an early one "
                  "(ErrorFeedbackOptions::quantile; default: the controller's)")
      ->check(CLI::Range(0.0, 0.999));
  cmd->add_option("--ttu-horizon", c->options.ttu_horizon,
                  "on/off: the controller's TTU horizon (default: the controller's)");
  cmd->add_flag("--rhythm-horizon,!--no-rhythm-horizon", c->options.rhythm_horizon,
                "Exact TTUs only as far ahead as each engine's rhythm needs (the default); "
                "--no-rhythm-horizon: always 5 s past the window (AdapterOptions::rhythm_horizon)");
  cmd->add_option("--issue-order", c->options.issue_order,
                  "use or commit: the order the provider issues committed reads in, for every "
                  "policy of an in-process stack (default: each policy's: by use for TempoKV's "
                  "configurations but tempokv-commit-order, by commit for the baselines; "
                  "ProviderOptions::issue_order)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, IssueOrder>{{"use", IssueOrder::kUse},
                                            {"commit", IssueOrder::kCommit}},
          CLI::ignore_case));
  cmd->add_flag("--remote-prefetch,!--no-remote-prefetch", c->options.remote_prefetch,
                "Fleet: TempoKV fetches a remote claim's objects by the whole path's laxity and "
                "commits it by the local part's (the default); --no-remote-prefetch: the commit "
                "by the whole path's laxity starts the fetch (ControllerOptions::remote_prefetch)");
  cmd->add_option("--engines", c->options.engines,
                  "Data-parallel engines (default 1; trace: chosen from the load)");
  cmd->add_option("--fast-tier-gib", c->fast_tier_gib,
                  "Fast-tier capacity (budget: half); default 100 (sim), 3.125 (real)");
  cmd->add_option("--jitter", c->jitter, "Step-time jitter sigma (default 0.05)");
  cmd->add_option("--trace", c->options.trace_path,
                  "Mooncake trace (default ../shared/traces/mooncake_conversation_trace.jsonl; "
                  "fleet: 'none' for its synthetic conversations)");
  cmd->add_option("--window-s", c->window_s, "trace: seconds of trace to replay (default all)");
  cmd->add_option("--window-start-s", c->options.window_start_s, "trace: where the window starts")
      ->capture_default_str();
  cmd->add_option("--time-scale", c->options.time_scale, "trace: arrival times × this")
      ->capture_default_str();
  cmd->add_option("--profiles", c->options.profiles_dir, "Directory of the cost profiles");
  cmd->add_option("--dir", c->options.dir,
                  "real: store directory on the SSD (default /var/tmp/tempokv-eval)");
  cmd->add_flag("--keep", c->options.keep, "real: keep the store directory afterwards");
  cmd->add_option("--repeats", c->options.repeats,
                  "Runs of each configuration; sim/real: reports the run with the median p95 "
                  "TTFT; vllm: each policy run that many times per seed and ratio, in turn, "
                  "every run a row, the verdicts on each seed's mean")
      ->check(CLI::Range(1u, 99u));
  cmd->add_flag("--via-service", c->via_service,
                "real: run the engines against a tempokvd per run (the one beside this binary)");
  cmd->add_option("--tempokvd", c->tempokvd, "real: the tempokvd binary (implies --via-service)");
  cmd->add_flag("--service-blocking", c->options.service_blocking,
                "--via-service: every engine call waits for its reply (no pipelined reports)");
  cmd->add_flag("--quiet", c->quiet, "No progress bar");
  cmd->callback([c, exit_code, seed] { *exit_code = run(*c, seed->count() > 0); });
}

}  // namespace tempokv::cli
