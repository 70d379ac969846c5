// ServingEngine: the emulated serving runtime (DESIGN.md §2). FCFS with a slot limit; per request:
// prefix lookup in the store at arrival -> claim (through its own RuntimeAdapter, exactly the
// calls an external runtime makes) -> wait in queue -> retrieval of the matched KV (fast tier ->
// device through the TransferEngine) -> prefill of the rest -> decode to the true output length.
// Compute is not run, it takes time: StepTruth's (the CostProfile's costs times a seeded jitter, or
// the hidden truth of another shape that the adapter can only learn from measured iterations).
//
// Iteration model (the TtuEstimator's, adapter/ttu_estimator.h, so TTU projects what happens):
//  * At a boundary the engine reports the waiting order (update_order), then admits
//    waiting requests in FCFS order while slots are free and the GPU's KV cache
//    (CostProfile::kv_capacity_tokens) holds the running contexts and the next prompt. An admitted request with a claim
//    requests retrieval: ready -> its retrieval runs in this iteration; wait -> it holds its slot
//    until the callback, then joins the next iteration; error -> recompute.
//  * An iteration runs the retrievals of its admitted requests one after another, then their
//    prefills, then one decode step of the requests already decoding. Every token of the
//    iteration (first tokens included) appears at its end; progress is reported then, and a
//    request that reached its true output length frees its slot.
//  * With nothing to run (only requests waiting for staging, or none) the engine idles until an
//    arrival or a readiness callback.
//  * Arrivals during an iteration update the order too. The engine never tells the adapter when
//    the running iteration will end (it knows its drawn step time; a runtime does not): the
//    adapter estimates it from iteration_started, the batch and its own calibrated costs.
//
// Baseline mode (no claims, the lmcache-dax comparison): no adapter and no controller; a hit is
// retrieved through StagingProvider::start_ordinary (resident chunks held, the rest read on demand
// into unprotected LRU room), then begin/end_transfer + release on the provider.
//
// Failures: a retrieval that fails (error answer, error callback, failed copy) falls back to
// prefilling the whole prompt (RequestPath::kRecompute) and is counted.
//
// Real mode: with verify_bytes, each restored chunk in the device buffer is checked against the
// store's XXH3-128 checksum; mismatches are counted (and must stay 0).
//
// Service mode (EngineContext.service): the same engine against tempokvd. Every runtime call
// goes to the ServiceClient instead of an own RuntimeAdapter (both are RuntimeApi); the prefix
// lookup at arrival is one lookup call for the request's chunk keys; copies read the claim's
// spans in the daemon's shared fast tier (ServiceClient::objects); verification compares with the
// content the KV was written with (fill_chunk_bytes: there is no local store); a fallback cancels
// through the client; records have no claim timeline (the controller is the daemon's). The
// client must be attached to the executor (its ready callbacks and heartbeats run on the loop).
//
// Ownership: the shared components in EngineContext (the client included) are borrowed and must
// outlive the engine; several engines may share one store, fast tier, provider, controller and
// writer, never one client. Request ids must be unique across engines sharing a controller,
// provider or daemon.
// Threading: the Executor's thread only; every callback runs there.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "adapter/cost_profile.h"
#include "adapter/runtime_adapter.h"
#include "controller/controller.h"
#include "engine/kv_writer.h"
#include "engine/request_record.h"
#include "engine/step_truth.h"
#include "provider/staging_provider.h"
#include "store/store.h"
#include "tempokv/runtime_api.h"
#include "transfer/transfer_engine.h"
#include "workload/request.h"

namespace tempokv {

class ServiceClient;
namespace service {
struct TierSpan;
}

// Shared components an engine borrows.
struct EngineContext {
  Executor* executor = nullptr;
  Store* store = nullptr;               // null with service
  StagingProvider* provider = nullptr;  // its tier is the fast tier retrievals copy from
  Controller* controller = nullptr;     // required unless options.baseline or service
  TransferEngine* transfer = nullptr;   // this engine's device link
  KvWriter* writer = nullptr;           // null: produced KV is not written (always, with service)
  ServiceClient* service = nullptr;     // set: the engine runs against tempokvd (not baseline)
};

struct EngineOptions {
  uint32_t engine_id = 0;              // names the engine in records
  uint32_t max_active = 4;             // slot limit (active sequences)
  double jitter_sigma = 0.05;          // lognormal σ of step times around the profile; 0: exact
  uint64_t seed = 1;                   // jitter stream
  bool baseline = false;               // no claims: ordinary retrieval through the provider
  bool verify_bytes = false;           // real mode: check restored bytes against the store
  uint32_t prior_output_tokens = 128;  // adapter's output prior before any completion
  uint32_t predictor_window = 256;     // completions the output predictor remembers
  // The adapter's cost profile is this engine's scaled by 1 + estimator_bias: an estimator that
  // is wrong on purpose (> -1). The engine's own step times never change.
  double estimator_bias = 0;
  // And then perturbed by shape (CostProfile::perturbed): per-term errors of ± estimator_error
  // that no single calibrated scale cancels (in [0, 0.9)).
  double estimator_error = 0;
  // What the engine's steps really cost (default: the oracle, the profile × jitter_sigma).
  StepTruthOptions truth;
  bool wait_order_statistics = false;  // AdapterOptions::wait_order_statistics
  bool rhythm_horizon = AdapterOptions{}.rhythm_horizon;
  // object_transferred after each object's copy. Only progressive release acts on it, so a
  // runtime that knows its policy is not progressive may skip the calls (through the service,
  // one round trip per object).
  bool report_objects = true;
  Status validate() const;
};

struct EngineStats {
  uint64_t submitted = 0;
  uint64_t arrived = 0;
  uint64_t finished = 0;
  uint64_t iterations = 0;
  uint64_t staged = 0;  // requests by path
  uint64_t ordinary = 0;
  uint64_t no_hit = 0;
  uint64_t recomputes = 0;  // retrieval failures that fell back to recompute
  uint64_t output_tokens = 0;
  uint64_t retrieved_bytes = 0;
  uint64_t verified_chunks = 0;
  uint64_t mismatched_chunks = 0;
  uint64_t preemptions = 0;  // hidden truth: decoders preempted and recomputed under KV pressure
};

class ServingEngine {
 public:
  static Result<std::unique_ptr<ServingEngine>> create(const EngineContext& context,
                                                       const CostProfile& profile,
                                                       const EngineOptions& options);
  ~ServingEngine();
  ServingEngine(const ServingEngine&) = delete;
  ServingEngine& operator=(const ServingEngine&) = delete;

  // Schedules each request to arrive at start + request.arrival. Ids must be new.
  Status submit(std::vector<Request> requests, TimePoint start);
  // Every submitted request has finished.
  bool done() const { return stats_.finished == stats_.submitted; }

  // One record per arrived request, in arrival order.
  std::vector<RequestRecord> records() const;
  EngineStats stats() const { return stats_; }
  RuntimeAdapter* adapter() { return adapter_.get(); }  // null in baseline and service mode

 private:
  enum class Stage : uint8_t { kWaiting, kRetrievalWait, kReady, kInIteration, kDecoding, kDone };
  struct Live {
    Request req;
    RequestRecord rec;
    Stage stage = Stage::kWaiting;
    std::vector<ManifestEntry> manifest;  // the hit, in retrieval order
    bool has_claim = false;               // a claim (or baseline ordinary claim) exists
    bool retrieve = false;                // its iteration runs a retrieval
    uint32_t generated = 0;
    bool preempted = false;  // hidden truth: recomputed in this episode of KV pressure
  };
  struct Iteration {
    std::vector<uint64_t> admits;    // retrieval + prefill in this iteration, in order
    std::vector<uint64_t> decoders;  // one decode step
    size_t next_retrieval = 0;
    uint32_t pending_copies = 0;
    Status copy_status;
    TimePoint compute_start{};  // projected until the retrievals are done
    TimePoint end{};            // projected until the compute starts
  };

  ServingEngine(const EngineContext& context, const CostProfile& profile,
                const EngineOptions& options);

  // serving_engine.cc: arrivals, boundaries, compute, progress.
  void arrive(uint64_t id);
  void kick();
  void boundary();
  void admit(uint64_t id);
  // The GPU's KV cache holds the running requests' contexts and this prompt too (always true with
  // nothing running, so an oversized prompt still runs alone).
  bool kv_fits(uint32_t prompt_tokens) const;
  void start_compute();
  void end_iteration();
  void finish(Live& r);
  void update_order();
  // engine_retrieval.cc: the prefix lookup, the retrieval of one admitted request, and its
  // fallbacks.
  void lookup_prefix(Live& r);
  void on_retrieval_answer(uint64_t id, Result<RetrievalPath> path);
  void mark_ready(Live& r, RequestPath path);
  void fall_back(Live& r, const Status& why);
  void next_retrieval();
  void start_copies(uint64_t id);
  void copies_done(uint64_t id);
  void verify(Live& r);
  Status begin_transfer(uint64_t id);
  Status end_transfer(uint64_t id);
  void fill_claim_timeline(Live& r);
  // The bytes of a ready claim's object in the daemon's shared tier; null when out of range.
  const std::byte* service_span(const service::TierSpan& span, uint64_t bytes) const;

  Executor& executor_;
  Store* store_;               // null with service
  StagingProvider* provider_;  // null with service
  Controller* controller_;     // null in baseline and service mode
  ServiceClient* service_;     // null in-process
  TransferEngine& transfer_;
  KvWriter* writer_;
  CostProfile profile_;
  EngineOptions options_;
  StepTruth truth_;
  std::unique_ptr<RuntimeAdapter> adapter_;  // in-process claims
  RuntimeApi* api_ = nullptr;                // adapter_ or service_; null in baseline mode

  std::unordered_map<uint64_t, Live> live_;
  std::vector<uint64_t> arrival_order_;
  std::deque<uint64_t> waiting_;
  std::vector<uint64_t> running_;  // holding slots, admission order
  std::deque<uint64_t> ready_;     // admitted, their work joins the next iteration
  std::optional<Iteration> iter_;
  bool boundary_posted_ = false;
  bool in_boundary_ = false;  // admissions under way: readiness joins this iteration
  std::unique_ptr<DeviceBuffer> device_;
  EngineStats stats_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

// Simulated-mode transfer options for a profile: the engine adds the profile's retrieval latency
// itself, so the link has none and moves bytes at the profile's retrieval rate.
TransferEngineOptions sim_transfer_options(const CostProfile& profile);

}  // namespace tempokv
