// The serving stack of one evaluation run (DESIGN.md §1-§2), assembled in either mode:
//
//  * EvalStorage: the executor, the SSD engine and the store. Simulated: a SimExecutor, the
//    simulated SSD with the paper's testbed (≈ 11 GiB/s aggregate reads, 16 in service, 80 µs
//    latency) and a metadata-only store; made fresh for every run. Real: a RealExecutor run on
//    the calling thread, io_uring O_DIRECT on segment files in a directory, the real store;
//    shared by the runs of one scenario (precomputed KV is written once and read by every run).
//  * EvalStack: what one run owns on top of a storage: the fast tier (metadata-only in sim,
//    anonymous memory in real mode; slot = one chunk), the staging provider, the controller with
//    the run's policy, one transfer link per engine (the profile's retrieval rate in sim, the
//    emulated memcpy engine in real mode), the KvWriter and N ServingEngines. Policy
//    "lmcache-dax" runs the engines in baseline mode (no claims; the controller then only
//    meters the tier, which nothing protects).
//  * Service mode (StackConfig.service_endpoint): the storage is only the RealExecutor and the
//    engines run against a tempokvd (EvalService starts it): each engine has its own
//    ServiceClient (its own runtime), attached to the executor; the stack has no tier, provider,
//    controller or writer of its own.
//
// Ownership: EvalStorage owns its executor, engine and store; EvalStack borrows the storage (which
// must outlive it) and owns the rest (in service mode: its clients, not the daemon). Threading:
// the storage's executor thread only, which in every mode is the thread that calls drive().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adapter/cost_profile.h"
#include "adapter/runtime_adapter.h"
#include "controller/controller.h"
#include "engine/kv_writer.h"
#include "engine/serving_engine.h"
#include "executor/real_executor.h"
#include "executor/sim_executor.h"
#include "fasttier/fast_tier.h"
#include "provider/staging_provider.h"
#include "ssd/ssd_engine.h"
#include "store/store.h"
#include "tempokv/client.h"
#include "transfer/transfer_engine.h"
#include "workload/request.h"

namespace tempokv {

enum class EvalMode { kSim, kReal };

// The SSD of a run.
struct StorageConfig {
  EvalMode mode = EvalMode::kSim;
  // Simulated SSD (the paper's testbed, DESIGN.md §6).
  double sim_read_bytes_per_s = 11.0 * double(1ULL << 30);
  double sim_write_bytes_per_s = 6.0 * double(1ULL << 30);  // trace replay writes produced KV
  Duration sim_latency = std::chrono::microseconds(80);
  uint32_t sim_concurrency = 16;
  // A latency tail no TTR model is told about (SimSsdEngine::set_latency_tail; 0: none).
  double sim_latency_tail_probability = 0;
  double sim_latency_tail_factor = 1;
  uint64_t sim_seed = 1;
  // Store geometry: segments of 64 chunks, objects up to 4 chunks.
  uint64_t chunk_bytes = 32ULL << 20;
  uint64_t capacity_bytes = 1ULL << 44;  // sim: effectively unbounded
  std::string dir;                       // real mode: the store's directory
  bool local_store = true;  // false (real, service mode): only the executor; tempokvd has the store
  // Sim: the storage runs on this executor (borrowed; it must outlive the storage) instead of one
  // of its own, so several storages share one virtual clock (the fleet's engines).
  SimExecutor* shared_sim = nullptr;
};

class EvalStorage {
 public:
  static Result<std::unique_ptr<EvalStorage>> open(const StorageConfig& config);
  ~EvalStorage();
  EvalStorage(const EvalStorage&) = delete;
  EvalStorage& operator=(const EvalStorage&) = delete;

  Executor& executor() { return *executor_; }
  SimExecutor* sim() { return sim_; }           // null in real mode
  RealExecutor* real() { return real_.get(); }  // null in simulated mode
  bool has_store() const { return store_ != nullptr; }
  Store& store() { return *store_; }  // only with a local store
  SsdEngine& ssd() { return *ssd_; }  // only with a local store
  const StorageConfig& config() const { return config_; }

  // Puts the requests' precomputed chunks (bytes in real mode) and waits for them.
  Status precompute(const std::vector<Request>& requests);
  // Runs the loop until done() holds. Sim: event by event (an empty queue before done() is a
  // stall, Internal). Real: the loop runs on this thread for at most real_limit. progress() is
  // called now and then.
  Status drive(const std::function<bool()>& done, const std::function<void()>& progress,
               Duration real_limit = std::chrono::minutes(10));
  // Waits for the store's writes, closes it (real mode: before the files are removed).
  Status close();

 private:
  explicit EvalStorage(const StorageConfig& config) : config_(config) {}

  StorageConfig config_;
  std::unique_ptr<SimExecutor> own_sim_;
  SimExecutor* sim_ = nullptr;  // own_sim_ or StorageConfig::shared_sim
  std::unique_ptr<RealExecutor> real_;
  Executor* executor_ = nullptr;
  std::unique_ptr<SsdEngine> ssd_;
  std::unique_ptr<Store> store_;
};

// One run's configuration on top of a storage.
struct StackConfig {
  std::string policy = "tempokv";  // a commit policy name, or "lmcache-dax" (baseline engines)
  CostProfile profile;
  uint64_t fast_tier_bytes = 100ULL << 30;  // rounded down to whole chunk slots
  uint64_t budget_bytes = 50ULL << 30;      // protected budget, rounded down to whole slots
  uint32_t engines = 1;                     // data-parallel engines sharing everything
  uint32_t max_active = 4;                  // FCFS active sequences per engine
  double jitter_sigma = 0.05;               // step-time jitter around the profile
  uint64_t seed = 1;                        // jitter streams (engine k uses seed + k)
  uint32_t prior_output_tokens = 128;       // the adapter's output prior
  double estimator_bias = 0;                // adapter's costs = engine's × (1 + bias)
  double estimator_error = 0;               // and perturbed by shape (CostProfile::perturbed)
  StepTruthOptions truth;                   // the engines' step times (default: the oracle)
  bool wait_order_statistics = false;       // AdapterOptions::wait_order_statistics
  bool error_feedback = true;               // ControllerOptions::error_feedback
  std::optional<double> feedback_quantile;  // ErrorFeedbackOptions::quantile (unset: its default)
  std::optional<bool> ttu_horizon;          // ControllerOptions::ttu_horizon (unset: its default)
  // AdapterOptions::rhythm_horizon, with ControllerOptions::chain_skips_bounds set to match.
  bool rhythm_horizon = AdapterOptions{}.rhythm_horizon;
  bool remote_prefetch = ControllerOptions{}.remote_prefetch;  // ControllerOptions'
  std::optional<IssueOrder> issue_order;  // ProviderOptions::issue_order (unset: the policy's)
  Duration tick = std::chrono::milliseconds(50);
  uint32_t max_reads_in_flight = 16;        // provider reads at once (= the SSD's concurrency)
  double prior_read_bytes_per_s = 11.0 * double(1ULL << 30);   // provider's rate before samples
  double static_read_bytes_per_s = 11.0 * double(1ULL << 30);  // tempokv-no-state-ttr's fixed rate
  // ProviderOptions::write_cost. Unset in sim: the simulated device's own read/write rate ratio
  // (the oracle); the hidden truth sets the provider's default, which knows nothing of it.
  std::optional<double> write_cost;
  bool write_produced_kv = false;           // KvWriter for requests with writes_kv
  bool verify_bytes = false;                // real mode: check restored bytes
  std::string service_endpoint;             // set: the engines talk to the tempokvd there
  // In-process: a remote tier the provider may claim from (StagingProvider::set_remote_source),
  // and the store the engines look their prefixes up in (null: the storage's). Borrowed; they
  // outlive the stack. The simulated fleet sets both (sim_remote_source.h).
  RemoteSource* remote_source = nullptr;
  Store* lookup_store = nullptr;
  bool pipeline_reports = true;  // service mode: progress reports do not wait for their replies

  bool baseline() const { return policy == "lmcache-dax"; }
  bool via_service() const { return !service_endpoint.empty(); }
};

// What the engines' ServiceClients spent on the service (service mode).
struct ServiceCallStats {
  uint64_t calls = 0;        // requests sent
  double seconds = 0;        // wall-clock seconds from each request to its reply (or send)
  uint64_t late_errors = 0;  // error replies to pipelined reports
};

class EvalStack {
 public:
  static Result<std::unique_ptr<EvalStack>> create(EvalStorage& storage, const StackConfig& config);
  ~EvalStack();
  EvalStack(const EvalStack&) = delete;
  EvalStack& operator=(const EvalStack&) = delete;

  // Distributes requests over the engines round-robin (request i to engine i mod N), arriving at
  // start + request.arrival.
  Status submit(std::vector<Request> requests, TimePoint start);
  // Runs until every engine is done and every reservation and read has drained (so C covers the
  // whole run; in service mode: the daemon's, polled through its stats). progress(finished,
  // submitted) is called now and then.
  Status run(const std::function<void(uint64_t, uint64_t)>& progress);

  bool engines_done() const;
  uint64_t finished() const;
  uint64_t submitted() const;
  std::vector<RequestRecord> records() const;  // every engine's, engine by engine

  Executor& executor() { return storage_.executor(); }
  // The in-process components (not in service mode).
  FastTier& tier() { return *tier_; }
  StagingProvider& provider() { return *provider_; }
  Controller& controller() { return *controller_; }
  // Service mode: the engines' calls until they were done (the drain's polls not included).
  ServiceCallStats service_calls() const { return service_calls_; }
  KvWriter* writer() { return writer_.get(); }
  std::vector<std::unique_ptr<ServingEngine>>& engines() { return engines_; }
  EngineStats engine_stats() const;  // summed over the engines
  const StackConfig& config() const { return config_; }

 private:
  EvalStack(EvalStorage& storage, const StackConfig& config)
      : storage_(storage), config_(config) {}
  // stack_service.cc: the engines of service mode, and the wait for the daemon to drain.
  Status create_service_engines();
  Status drain_service();
  ServiceCallStats sum_service_calls() const;

  EvalStorage& storage_;
  StackConfig config_;
  std::unique_ptr<FastTier> tier_;
  std::unique_ptr<StagingProvider> provider_;
  std::unique_ptr<Controller> controller_;
  std::vector<std::unique_ptr<TransferEngine>> links_;
  std::unique_ptr<KvWriter> writer_;
  std::vector<std::unique_ptr<ServiceClient>> clients_;  // service mode: one per engine
  std::vector<std::unique_ptr<ServingEngine>> engines_;
  ServiceCallStats service_calls_;
};

}  // namespace tempokv
