// `tempokv eval` as a library (DESIGN.md §2 Evaluation): runs one scenario's matrix of policies ×
// models × ratios × fast-tier sizes × rates in simulated or real mode and returns one row per run
// and one record per request. The CLI (tools/tempokv/eval_cmd.cc) prints, writes and plots them;
// docs/evaluation.md describes every scenario and field.
//
// Scenarios: fig4-policies, fig5-capacity, fig6-rate, trace, fig1-lead, fig2-rank, fleet.
// Policies: demand, immediate, queue-K, tempokv and its variants (tempokv_configurations(): the
// ablations, each TempoKV with one mechanism off, and tempokv-progressive), and lmcache-dax
// (baseline engines: plain LRU fast tier, no claims).
//
// Threading: run_eval() runs every simulation (and real-mode run) on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error_buckets.h"
#include "engine/request_record.h"
#include "eval/stack.h"
#include "tempokv/status.h"

namespace tempokv {

inline constexpr const char* kAllPolicies[] = {"demand",         "immediate", "queue-1",
                                               "queue-4",        "tempokv-static", "tempokv"};

struct EvalOptions {
  EvalMode mode = EvalMode::kSim;
  std::string scenario;               // fig4-policies, fig5-capacity, fig6-rate, trace, ...
  std::vector<std::string> policies;  // empty: the scenario's own list
  std::vector<std::string> models;    // sim fig4: filter of llama-3.1-8b, qwen2.5-14b
  std::vector<double> ratios;         // fig4: filter of 0.5, 0.75, 1.0
  std::string profiles_dir;           // where <profile>.json files are
  uint64_t seed = 1;                  // workload and jitter seed
  // run_eval_seeds(): seeds 1..N of the same matrix, folded into one row per configuration
  // (seed 1's run plus the mean and 95 % interval of the main metrics). run_eval() runs `seed`.
  uint32_t seeds = 1;
  // The adapter's cost profile is the engine's scaled by 1 + estimator_bias (every compute and
  // retrieval cost), so the TTU estimator is wrong on purpose; its online calibration and the
  // controller's error feedback are what remain to correct it. Sim and real modes.
  double estimator_bias = 0;
  // Sim: what the estimators are up against. "hidden" (the default): the engines' steps follow
  // StepTruth's hidden model, the SSD its own rate, concurrency and latency tail, the outputs a
  // lognormal the generation limit cuts, and the provider's prior, write cost and the adapter's
  // output prior are fixed guesses the runs correct from what they measure (docs/evaluation.md
  // "Hidden truth"). "oracle": the estimators' own models are the truth (profile × jitter, the
  // SSD the provider's prior describes, uniform outputs with a prior from the same generator).
  std::string truth = "hidden";
  // The adapter's profile perturbed by shape (CostProfile::perturbed) and the provider's prior
  // and the fixed TTR rate × (1 + estimator_error): an error calibration does not cancel.
  double estimator_error = 0;
  // Sim, hidden truth: the simulated SSD `device_speedup` times faster (its read and write rates
  // x F, its latency and stalls / F) and its stalls (4.8 ms) at this probability per read (unset:
  // 0.02), the provider still told the testbed's: probes of how much of a figure the device
  // alone decides (a device that reads at no cost is the bound of any staging schedule).
  double device_speedup = 1;
  std::optional<double> device_stalls;
  // Sim, hidden truth: the engines admit only up to their KV pressure line, as vLLM's scheduler
  // admits against its real free blocks (StepTruthOptions::admit_by_line); by default up to the
  // profile's capacity, past the line, so that the preemptions set Qwen's p95.
  bool admit_by_line = false;
  // AdapterOptions::wait_order_statistics for every in-process adapter (sim and real modes; not
  // the daemon-backed stacks, whose adapter the daemon configures). Unset: by configuration
  // (projects_order_statistics: on for TempoKV's but tempokv-no-order-stats, off for the rest).
  std::optional<bool> wait_order_statistics;
  // The controller folds recent estimation error into TempoKV's laxity (DESIGN.md §4); off:
  // the plain rule for every TempoKV configuration (tempokv-static has it off regardless).
  bool error_feedback = true;
  // ErrorFeedbackOptions::quantile for every controller (unset: its default).
  std::optional<double> feedback_quantile;
  // ControllerOptions::ttu_horizon for every run (unset: the controller's default).
  std::optional<bool> ttu_horizon;
  // AdapterOptions::rhythm_horizon for every engine (with ControllerOptions::chain_skips_bounds).
  bool rhythm_horizon = AdapterOptions{}.rhythm_horizon;
  // ProviderOptions::issue_order for every in-process stack (sim and real modes; a daemon-backed
  // stack's daemon takes its policy's). Unset: by configuration (issue_order_of()).
  std::optional<IssueOrder> issue_order;
  // ControllerOptions::remote_prefetch for every run (fleet: TempoKV's two stages for remote
  // claims).
  bool remote_prefetch = ControllerOptions{}.remote_prefetch;
  uint32_t engines = 0;               // 0: the scenario's default (trace: chosen from the load)
  std::optional<double> fast_tier_gib;  // overrides the scenario's fast tier (budget: half)
  std::optional<double> jitter_sigma;   // overrides the engine's step-time jitter
  uint32_t max_requests = 0;  // fig4-policies, fig5-capacity: the first N requests only (0: all)
  // The adapter's output prior: the calibration set's mean output (paper §5.1) or, when false,
  // the generation limit.
  bool calibrated_prior = true;
  // trace
  std::string trace_path;
  double window_start_s = 0;
  std::optional<double> window_s;  // unset: the whole trace (sim), 60 s (real)
  double time_scale = 1.0;
  // real mode
  std::string dir;          // store directory (created; removed afterwards unless keep)
  std::string cluster_script;  // fleet: scripts/cluster, which starts the local Redis Cluster
  bool keep = false;
  Duration real_run_limit = std::chrono::minutes(10);  // per run, wall clock
  // Runs of each configuration; the row (and its CSV records) is the run with the median p95
  // TTFT, plus its spread. Real mode on a shared machine needs it; sim runs are deterministic.
  uint32_t repeats = 1;
  // Service mode (real mode; fig4-policies, fig5-capacity, fig6-rate; not lmcache-dax): the
  // tempokvd binary each run's engines talk to, a fresh daemon per run on dir/tempokvd. "": the
  // stack runs in-process.
  std::string tempokvd;
  // Service mode: every call of the engines waits for its reply (by default their progress
  // reports are pipelined: ClientOptions::pipeline_reports).
  bool service_blocking = false;

  // label, requests finished, requests submitted
  std::function<void(const std::string&, uint64_t, uint64_t)> progress;
  std::function<void(const std::string&)> log;  // notes printed as a scenario goes
};

// One run (one JSON row). Common fields first; the scenario's own fields in `extra`, in order.
struct EvalRow {
  std::string scenario, policy, model;
  std::string truth;         // sim: "hidden" or "oracle" (EvalOptions::truth); real: empty
  double ratio = 0;          // prefix cache ratio (fraction)
  double fast_tier_gib = 0;  // capacity
  double budget_gib = 0;     // protected budget
  double rate = 0;           // offered requests per second (0: trace timestamps)
  uint32_t engines = 1;
  uint64_t requests = 0, completed = 0, output_tokens = 0;
  double p50_ttft_s = 0, p95_ttft_s = 0, p99_ttft_s = 0, mean_ttft_s = 0;
  double throughput_tok_s = 0, makespan_s = 0;
  double c_gib_s_per_req = 0, c_floor_gib_s_per_req = 0, c_floor_staging_gib_s_per_req = 0;
  uint64_t refused_commits = 0;   // claims refused at least once for budget or capacity
  uint64_t refused_attempts = 0;  // commit attempts refused
  uint64_t commits = 0;
  uint64_t ordinary_retrievals = 0, staged_retrievals = 0, no_hit = 0, recomputes = 0;
  uint64_t verified_chunks = 0, mismatched_chunks = 0;  // real mode
  double wall_s = 0;  // wall-clock seconds the run took
  std::vector<std::pair<std::string, double>> extra;
  ErrorHistograms histograms;  // the claims' TTU error, TTR error and lateness

  double get(const std::string& name) const;  // an extra field (NaN when absent)
};

// The per-request records of one run, with the row's identity.
struct RunRecords {
  size_t row = 0;           // index into EvalResult::rows
  TimePoint start{};        // the run's first submission: CSV times are relative to it
  std::vector<RequestRecord> records;
};

struct EvalResult {
  std::vector<EvalRow> rows;
  std::vector<RunRecords> runs;
  std::vector<std::string> notes;  // what the scenario printed (utilisation, sizes, ...)
  bool skipped = false;            // the scenario could not run here (e.g. trace absent)
};

// Known scenario names, in the order `--scenario all` would run them.
std::vector<std::string> eval_scenarios();
// Validates options (scenario, policy names, mode) with messages naming the option.
Status validate_eval_options(const EvalOptions& options);
Result<EvalResult> run_eval(const EvalOptions& options);
// run_eval over seeds 1..options.seeds (just run_eval when seeds < 2). Each row is seed 1's run
// with `<metric>_mean` and `<metric>_ci95` extra fields (the 95 % Student-t half-width) for p95,
// p50 and mean TTFT, C, throughput, lateness p50/p95 and late claims, and `seeds`. The records
// are seed 1's.
Result<EvalResult> run_eval_seeds(const EvalOptions& options);

struct MeanCi {
  double mean = 0;
  double ci95 = 0;  // half-width; 0 for fewer than two values
};
MeanCi mean_ci95(const std::vector<double>& values);

}  // namespace tempokv
