// Runner: the loop every scenario shares. For one run it builds the storage (fresh in simulated
// mode; one shared directory per scenario in real mode), precomputes the workload's KV, builds
// the EvalStack, submits, runs to the end, computes the metrics and appends the row and the
// per-request records to the result. Internal to the eval library.
//
// Service mode (EvalOptions.tempokvd): the storage is only the executor; each run starts a fresh
// tempokvd (EvalService) configured like the in-process stack, precomputes through it, runs the
// engines against it and reads C, commits and refusals from the differences of its counters.
// Threading: the calling thread (it drives the executor).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "eval/eval.h"
#include "eval/eval_service.h"
#include "eval/metrics.h"
#include "eval/stack.h"

namespace tempokv {

struct RunSpec {
  std::string label;  // shown by the progress bar
  EvalRow row;        // identity fields set by the scenario (scenario, policy, model, ratio, rate)
  StackConfig stack;
  std::vector<Request> requests;
  bool precompute = true;
  bool fresh_storage = false;  // real mode: a new, empty store for this run (sim: always)
  std::vector<Request> also_precompute;  // KV the scenario needs besides the requests' own
  // After the stack is built and before the requests are submitted, at `start`.
  std::function<Status(EvalStack&, TimePoint start)> before_submit;
  // Right after submitting (timers set here at equal times run after the arrivals).
  std::function<Status(EvalStack&, TimePoint start)> after_submit;
  // After the run drained: adds the scenario's fields to the row.
  std::function<void(EvalStack&, TimePoint start, EvalRow&)> after_run;
};

// The row's metric fields from a run's metrics (Runner::run_once; the fleet scenario).
void apply_run_metrics(const RunMetrics& m, EvalRow& row);

class Runner {
 public:
  Runner(const EvalOptions& options, EvalResult& result);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  const EvalOptions& options() const { return options_; }
  bool sim() const { return options_.mode == EvalMode::kSim; }
  bool via_service() const { return !options_.tempokvd.empty(); }
  // profiles_dir/<name>.json
  Result<CostProfile> profile(const std::string& name) const;
  // The scenario's policies: options.policies when given, else `defaults`.
  std::vector<std::string> policies(std::vector<std::string> defaults) const;
  void note(const std::string& line);
  // The simulated SSD of a run (--truth hidden: a device other than the one the provider is told
  // of) for chunks of chunk_bytes.
  StorageConfig sim_storage(uint64_t chunk_bytes) const;
  // The rows' truth: the option's, with the truth's probes named ("hidden, device x1000",
  // "hidden, stalls 0", "hidden, admits by line").
  std::string truth_label() const;

  // Runs one spec options.repeats times; the run with the median p95 TTFT lands in result.rows
  // (returned). In real mode the first run of a scenario is preceded by the same run unmeasured
  // (first touch of memory, the SSD settling after the precompute's writes), so the first policy
  // measured is not penalised.
  Result<EvalRow> run(RunSpec spec);
  // Real mode: stops the daemon (service mode: an error unless it exits 0), closes the shared
  // store and removes its directory (unless keep). Idempotent.
  Status finish();

  // Real-mode scale of this machine: chunk bytes, the SSD rate the TTR prior and the fixed-rate
  // TTR assume, and the store's capacity.
  static constexpr double kRealSsdBytesPerS = 2.0 * double(1ULL << 30);
  static constexpr uint64_t kRealStoreCapacityBytes = 24ULL << 30;

 private:
  Result<EvalStorage*> storage_for(const StackConfig& stack, bool fresh);
  struct Outcome {
    EvalRow row;
    TimePoint start{};
    std::vector<RequestRecord> records;
  };
  Result<Outcome> run_once(RunSpec spec);
  // Service mode: a fresh daemon for the spec's stack, the precompute through it, and the
  // stack's endpoint.
  Status start_service(EvalStorage& storage, RunSpec& spec);
  // The run's controller and tier numbers: the in-process stack's, or the differences of the
  // daemon's counters since `before`.
  Result<ControlCounters> run_counters(EvalStack& stack, const ControlCounters& before);

  const EvalOptions& options_;
  EvalResult& result_;
  std::unique_ptr<EvalStorage> storage_;  // the current run's (sim) or the shared one (real)
  std::unique_ptr<EvalService> service_;  // service mode, with the storage
  bool created_dir_ = false;
  bool warmed_up_ = false;
};

}  // namespace tempokv
