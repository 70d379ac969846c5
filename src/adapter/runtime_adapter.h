// RuntimeAdapter: the API a serving runtime calls (DESIGN.md §2, the paper's §3.1), in-process.
//
// The runtime tells it about every request it queues (prompt size, matched prefix, generation
// limit), reports the reusable-KV hit of a request as an ordered manifest of KV objects (a
// metadata-only claim), updates its waiting order after each scheduling iteration, reports
// progress (admitted, prefill done, tokens generated, finished), and brackets the retrieval of a
// claim's KV: request it (answered ready / wait with a callback / ordinary), begin and end the
// transfer, or cancel. From the requests it knows, the adapter builds the RuntimeSnapshot and
// projects each waiting claim's time-to-use (TtuEstimator) on every order update; the controller
// ages those estimates. Output lengths are predicted from completed requests only.
//
// Several runtimes may share one controller, each through its own adapter with its own
// AdapterOptions::runtime_id; claim (request) ids must then be unique across them.
//
// Request ids are the runtime's own; unknown or duplicate ids, empty manifests and manifests
// larger than the protected budget get clear errors.
//
// Threading: the Executor's thread only (the service puts a socket in front of it).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "adapter/cost_profile.h"
#include "adapter/output_predictor.h"
#include "adapter/ttu_estimator.h"
#include "common/checked_ids.h"
#include "common/flat_id_map.h"
#include "controller/controller.h"
#include "tempokv/runtime_api.h"
#include "tempokv/runtime_snapshot.h"

namespace tempokv {

struct AdapterOptions {
  uint32_t max_active = 4;           // the runtime's slot limit (active sequences)
  uint32_t predictor_window = 256;   // completed outputs remembered for the output predictor
  uint32_t prior_output_tokens = 128;  // expected output length before any completion
  // The TTU horizon's slack past the commit window (Controller::ttu_horizon): on, the runtime's
  // rhythm (horizon_slack(): twice its recent gap between order updates, 20 ms to 5 s), so a step
  // projects and updates only the claims near their use; off, always 5 s. On, the step costs
  // 0.55-0.7x of off (docs/step-cost.md), and claims crossing the horizon between updates are
  // revised mid-iteration. On, the first chain_span() claims of the order are projected exactly
  // wherever they lie; the controller's chain must then skip bounds
  // (ControllerOptions::chain_skips_bounds, which tempokvd and the eval stacks set with it).
  bool rhythm_horizon = true;
  // Which runtime this adapter speaks for when several (data-parallel engines) share one
  // controller: its waiting order is kept and ranked apart from the others'.
  uint32_t runtime_id = 0;
  // The TTU projection asks the controller when the KV of this many requests ahead (the first of
  // the waiting order, and admitted ones still waiting for their KV) will be ready.
  uint32_t readiness_lookahead = 16;
  // The runtime's tokens per iteration when it chunks prefills (vLLM's max_num_batched_tokens):
  // the TTU projection then runs each prefill chunk by chunk (RuntimeSnapshot::token_budget).
  // 0: prefills run whole in the iteration that admits them (the emulated engine).
  uint32_t token_budget = 0;
  // Online calibration: each measured iteration (iteration_started to its first progress report)
  // against the profile's cost for that batch moves the cost scale by this weight (EWMA of the log
  // ratio, each measurement's ratio but the first clamped to 4x either side of the current scale,
  // so that repeated measurements reach any scale; the n-th weighs max(weight, 1/n), so the
  // first set the scale by their mean); 0 keeps the profile as given.
  double calibration_weight = 0.2;
  // How the TTU projection takes the outputs of the requests ahead (TtuEstimator): 0, the output
  // predictor's conditional mean (the paper's); q in (0, 1], the conditional q-quantile. Under
  // long-tailed outputs the mean of each request ahead projects waits longer than most turn out
  // (a slot frees at the first of several completions, sooner than the first of their means), so
  // uses come sooner than projected; the median is not pulled by the tail. Off by default: on the
  // trace (seed 1) the median left fewer claims late but raised C by 8 % and did not lower p95,
  // and on fig4 it moved C up by 0.3-5 %.
  double wait_quantile = 0;
  // The TTU projection lets the requests decoding at a snapshot (2 to 8 of them) complete at the
  // expected order statistics of their remaining outputs under the predictor's conditional
  // distributions instead of at their means: the first slot frees at E[first completion], which
  // long-tailed outputs put well before the first of the means (TtuEstimator). Not with
  // wait_quantile. Off here; on for TempoKV's configurations in the eval and tempokvd
  // (projects_order_statistics, controller.h; docs/evaluation.md, "Policies").
  bool wait_order_statistics = false;
  // The runtime loads KV asynchronously and a request whose KV loads holds no slot (vLLM's KV
  // connectors; RuntimeSnapshot::async_loads, set by a hello's async_loads). A request admitted
  // with a claim is loading, off the slots, until its first prefill chunk runs; the copy runs
  // outside the iterations, so it is in no iteration's cost (projected or calibrated) and is not
  // scaled by the cost scale: it is timed from begin_transfer to end_transfer (load_scale()).
  // false: the emulated engine's rule (an admitted request holds its slot; the retrieval runs in
  // the iteration of its prefill, at the profile's cost times the cost scale).
  bool async_loads = false;
  // Staging ahead is not asked for where it makes the runtime preempt: once the runtime has
  // preempted (preemption_line()), a claim whose request the projection admits into slots whose
  // summed context passes pressure_deferral × the line is reported with no near use, so a timed
  // policy commits it at its retrieval request. KV ready at admission makes a request decode at
  // once beside the long contexts already there, and each episode of pressure recomputes every
  // decoder's context; read after admission, it joins while the batch drains (docs/evaluation.md,
  // "Preemptions"). 0.7 was chosen on fig4's tuning seeds 1-10 (Qwen: p95 within 2-5 % of
  // Demand's at every ratio, as with 0.5; 0.9 left it 5-18 % above, 1.0 28 % at 100 %). 0: off.
  double pressure_deferral = 0.7;
  Status validate() const;
};

// The given profile's cost of one iteration, split: its prefill chunks (with, without async
// loads, their retrievals) and its decode step.
struct IterationCost {
  Duration prefill{0};
  Duration decode{0};
  Duration total() const { return prefill + decode; }
};

// RequestInfo is declared with RuntimeApi (runtime_api.h).
class RuntimeAdapter : public RuntimeApi {
 public:
  // Estimates and times come from the controller (and its Executor); the adapter keeps none.
  static Result<std::unique_ptr<RuntimeAdapter>> create(Controller& controller,
                                                        const CostProfile& profile,
                                                        const AdapterOptions& options);

  // A request entered the runtime's waiting queue. Every request, hit or not, so the projection
  // sees the whole queue.
  Status add_request(const RequestInfo& request) override;
  // The request's matched prefix KV, in retrieval order: becomes a PLANNED claim.
  Status report_hit(uint64_t id, std::vector<ManifestEntry> manifest) override;
  // The runtime's waiting order after a scheduling iteration; reprojects every TTU and ranks
  // every waiting request (hit or not) for the controller. A request admitted before is left
  // out (a runtime may queue it again after its claim ended, e.g. a failed load); an unknown
  // id is NotFound. `boundary_in` is ignored: the adapter
  // estimates the end of the iteration now running itself, from when it started, its batch and
  // the calibrated costs (kept for protocol v1 callers).
  Status update_order(std::span<const uint64_t> waiting,
                      Duration boundary_in = Duration::zero()) override;

  // An iteration started now: at its end `prefills` (with their retrievals) will have produced
  // their first token and `decoders` one more token. An order update during the iteration
  // projects from the state at its estimated end; its measured length calibrates the costs.
  Status iteration_started(std::span<const uint64_t> prefills,
                           std::span<const uint64_t> decoders) override;
  // The same, where the runtime says how many prompt tokens each prefill computes in this
  // iteration (a chunk of a chunked prefill; 0: all that are left): the iteration's cost is
  // then that of the chunks, after the tokens earlier chunks computed.
  Status iteration_started(std::span<const uint64_t> prefills,
                           std::span<const uint32_t> prefill_tokens,
                           std::span<const uint64_t> decoders);
  Status admitted(uint64_t id) override;
  Status prefill_done(uint64_t id) override;  // the prefill produced the first token
  Status tokens_generated(uint64_t id, uint32_t total_generated) override;
  // The request is done; a claim of it that is not released yet is cancelled.
  Status finished(uint64_t id, uint32_t output_tokens) override;

  // The runtime preempted this running (decoding) request in the iteration now running and
  // recomputes its context there: vLLM's recompute preemption when the KV cache runs short, which
  // its scheduler reports. The recompute (the profile's prefill of the context) joins the open
  // iteration's cost, so the iteration's measurement calibrates no scale by it, and the decoders'
  // summed context in that iteration bounds the preemption line (preemption_line()).
  Status preempted(uint64_t id);
  // The lowest summed decode context at which the runtime has preempted (0 before any): the TTU
  // projection preempts above it (TtuEstimator::set_preemption_line).
  uint64_t preemption_line() const { return estimator_.preemption_line(); }

  Result<RetrievalAnswer> request_retrieval(uint64_t id, RetrievalCallback on_ready) override;
  Status begin_transfer(uint64_t id) override;
  Status end_transfer(uint64_t id) override;
  // One object of the claim has been copied to the device (progressive release).
  Status object_transferred(uint64_t id, const Key& key) override;
  // Forgets the request and cancels its claim; a known request whose claim already ended
  // (released after its copy) is only forgotten.
  Status cancel(uint64_t id) override;

  // The last TTU projected for a waiting request (NotFound when none).
  Result<Duration> last_ttu(uint64_t id) const override;
  const OutputPredictor& predictor() const { return predictor_; }
  // Measured iteration time / the given profile's cost of it (the online calibration; 1 before
  // any iteration): of the prefills (and their retrievals), and of the decode step. A runtime's
  // prefill and decode can be off from the profile by different factors (vLLM's CPU backend
  // against cpu-small: ~70x and ~25x), and one scale for both made a decode step of vLLM look
  // twice as long as it was, so loads it started at the next step were projected seconds later.
  // With a runtime that measures its iterations (iteration_measured), decode-only iterations
  // calibrate the decode scale and the others the prefill scale, from what the decode step
  // leaves of the measurement; until a decode-only iteration is measured the decode scale
  // follows the prefill scale. Timed by the adapter's clock, one scale for both (calibrate()).
  double cost_scale() const { return prefill_scale_.value; }
  double decode_cost_scale() const { return decode_scale_.value; }
  uint32_t token_budget() const { return options_.token_budget; }
  bool async_loads() const { return options_.async_loads; }
  bool wait_order_statistics() const { return options_.wait_order_statistics; }
  // Measured copy time (begin_transfer to end_transfer) / the given profile's retrieval cost of
  // its bytes: the median of the last kLoadSamples copies; 0 before one was measured.
  double load_scale() const { return load_scale_; }
  // With async loads: how long the copy of `bytes` to the device takes, the profile's retrieval
  // cost × load_scale(); before any copy was measured, × the cost scale (as a step's work).
  Duration load_time(uint64_t bytes) const;
  static constexpr size_t kLoadSamples = 9;
  // The given profile's cost of the iteration iteration_started opened last (zero before any).
  IterationCost open_iteration_cost() const { return iteration_cost_; }
  // A runtime that measures its own iterations reports one: `profile_cost` is what
  // open_iteration_cost() said when it started, `actual` what the runtime measured. It
  // calibrates the costs as a measured iteration does; from then on the adapter's own clock
  // (iteration_started to the next progress report) still ends iterations but no longer
  // calibrates: the runtime's measurement does not include message delays or idle gaps.
  void iteration_measured(IterationCost profile_cost, Duration actual);
  struct Stats {
    uint64_t waiting = 0;  // requests added and not admitted
    uint64_t running = 0;  // admitted, not finished
    uint64_t iterations_calibrated = 0;  // measurements that moved the cost scale
    bool runtime_measures = false;       // iteration_measured was called
  };
  Stats stats() const;
  Controller& controller() { return controller_; }

 private:
  RuntimeAdapter(Controller& controller, const CostProfile& profile,
                 const AdapterOptions& options);
  enum class Phase : uint8_t { kWaiting, kRunning, kFinished };
  struct Req {
    RequestInfo info;
    Phase phase = Phase::kWaiting;
    bool has_claim = false;
    uint32_t generated = 0;
    bool prefill_done = false;
    bool prefill_in_iteration = false;  // its prefill runs in the iteration now running
    bool decode_in_iteration = false;   // it decodes a token in the iteration now running
    uint32_t prefilled_tokens = 0;      // prompt tokens its earlier prefill chunks computed
    Duration last_ttu{-1};
    // With a claim: the use time last reported for it was only a lower bound, at least this.
    std::optional<TimePoint> bound_use_at;
    std::optional<TimePoint> transfer_began;  // begin_transfer of its claim
    // Preempted in the current episode of KV pressure (until an iteration whose decoders' summed
    // context is at or below the preemption line).
    bool preempted = false;
  };
  Result<Req*> find(uint64_t id, const char* call);
  // The given profile's cost of one iteration of these requests.
  // `prefill_tokens` (may be empty): each prefill's chunk, 0 for all that are left.
  IterationCost iteration_cost(std::span<const uint64_t> prefills,
                          std::span<const uint32_t> prefill_tokens,
                          std::span<const uint64_t> decoders);
  // The first progress report after iteration_started: the iteration has ended; calibrate
  // (unless the runtime measures its iterations itself).
  void iteration_ended();
  void calibrate(IterationCost profile_cost, Duration actual);
  Duration ready_in(uint64_t id) const;
  // Async loads: time until an admitted request's KV is on the device (0: it is, or its claim
  // ended). `ask_ready`: ask the controller when its KV is ready (the readiness lookahead).
  Duration loaded_in(uint64_t id, const Req& r, bool ask_ready) const;
  void record_load(Duration profile_cost, Duration actual);
  // The request's claim is released or cancelled (or the controller no longer knows it).
  bool claim_ended(uint64_t id) const;
  // Lets the controller revise lower-bound TTUs between order updates (Controller::set_reviser).
  void register_reviser();
  // How far past its commit window the controller's TTU horizon reaches (Controller::ttu_horizon):
  // until this runtime's next order update with room to spare, twice the longest of the last
  // gaps between its updates and the running iteration's time left (`boundary_in`), within
  // [kMinHorizonSlack, Controller::kMaxHorizonSlack]; the maximum before the first gap. Records
  // this update's gap (not a revision's). A runtime that steps often projects a short horizon, so
  // its step touches only the claims near their use; a bound that reaches the window between
  // updates is revised on the controller's request.
  Duration horizon_slack(TimePoint now, Duration boundary_in);
  static constexpr Duration kMinHorizonSlack = std::chrono::milliseconds(20);

  Controller& controller_;
  // update_order's scratch, kept to allocate nothing per update: the waiting requests' records,
  // the snapshot, the order without requests admitted before, the controller's updates. The
  // first two are those of the order last checked (order_checked_) and stand while no request
  // has been added, erased or admitted since (requests_changes_ counts those): the next update
  // of the same order looks up none of its requests.
  std::vector<Req*> scratch_waiting_;
  RuntimeSnapshot snap_;
  std::vector<uint64_t> scratch_order_;
  CheckedIds order_checked_;
  uint64_t requests_changes_ = 0;
  std::vector<std::pair<ClaimId, Duration>> scratch_updates_;
  std::vector<uint8_t> scratch_lower_bound_;
  std::vector<uint64_t> scratch_admission_context_;
  std::vector<uint8_t> scratch_deferred_;
  CostProfile profile_;     // as given
  CostProfile calibrated_;  // profile_ × the scales: what the estimator projects with
  AdapterOptions options_;
  OutputPredictor predictor_;
  TtuEstimator estimator_;
  FlatIdMap<Req> requests_;  // a Req* holds only until the next add or erase
  std::vector<uint64_t> running_;  // admitted, not finished
  bool iteration_open_ = false;
  TimePoint iteration_start_{};
  IterationCost iteration_cost_;  // the given profile's cost of the open iteration
  // A bias-corrected EWMA of log(measured / profile cost) (calibrate()).
  struct Scale {
    double log = 0.0;
    double value = 1.0;
    uint64_t n = 0;  // measurements taken
    // clamp_first: the first measurement too moves it at most 4x (it was set from another).
    void update(double log_ratio, double weight, bool clamp_first = false);
  };
  Scale prefill_scale_, decode_scale_;
  std::vector<double> load_ratios_;  // the last kLoadSamples measured copies / profile cost
  size_t load_next_ = 0;             // where the next sample goes once the ring is full
  double load_scale_ = 0.0;
  bool runtime_measures_ = false;
  uint64_t iterations_calibrated_ = 0;
  std::vector<uint64_t> last_order_;  // the last update_order's waiting requests
  // horizon_slack(): the last gaps between order updates (a ring) and the last update's time.
  std::array<Duration, 8> gaps_{};
  size_t gap_next_ = 0;
  std::optional<TimePoint> last_update_at_;
  bool revising_ = false;  // update_order is the controller's revision
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // the reviser checks it
};

}  // namespace tempokv
