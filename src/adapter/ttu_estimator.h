// TtuEstimator: time-to-use of every waiting request (DESIGN.md §4), the runtime side of laxity.
//
// TTU is the time until a request's fast-tier → device retrieval starts, assuming its KV is ready.
// One read-only projection of a RuntimeSnapshot gives it for the whole queue: running and queued
// requests advance on one shared timeline under the slot limit and the execution model the
// emulated engine runs (the iteration below), with calibrated costs (CostProfile) and predicted
// output lengths (OutputPredictor). Concurrent work is not summed: a decode step serves the whole
// batch.
//
// Iteration model (also the emulated engine's): at each boundary, waiting requests are admitted in
// order while slots are free; the runtime asks for an admitted request's KV at that boundary, so
// that is its TTU. An iteration runs, in order, the retrievals (one after another) and prefills
// of admitted requests whose KV is ready, and one decode step of the requests already decoding; a
// prefill produces the request's first token. An admitted request whose KV is not ready yet (a
// known retrieval dependency of a request ahead: RunningRequest / WaitingRequest ready_in_ns)
// holds its slot and joins the first iteration that starts once it is ready; with nothing else to
// run the runtime idles until then. An iteration without prefills is one decode step of the whole
// batch; the projection jumps over runs of such steps in closed form (up to the first predicted
// completion or readiness), so its cost is linear in the number of requests, not tokens.
//
// Async loads (RuntimeSnapshot::async_loads, vLLM's KV connectors; vLLM 0.32's Scheduler.schedule):
// a request whose KV loads holds no slot. At a boundary with a slot free and tokens left in the
// budget after the running requests', the requests whose KV has arrived take free slots first, in
// order; then the waiting order is walked while a slot is free: a request with a hit has its load
// started there (its TTU) and stays off the slots, so one free slot starts the loads of the whole
// queue behind it; one without a hit takes a slot. A started load is on the device at
// max(boundary, its KV ready) + its copy (WaitingRequest::load_ns), which runs outside the
// iterations; it then takes a slot at the first boundary with one free.
//
// Cost: the decoding slots are kept as aggregates (their summed context, and a heap of the decode
// step at which each completes), so an event (an admission, a prefill iteration, a jump to the
// next completion) costs O(log slots + requests admitted but not yet prefilled), not O(slots):
// 256 running and 1,000 waiting project in tens of microseconds. A horizon bounds it further: the
// projection stops at the first boundary past it, and every request not admitted by then gets
// that boundary as its TTU (a lower bound of its true TTU).
//
// Not thread-safe; stateless apart from its references (profile and predictor must outlive it).
#pragma once

#include <vector>

#include "adapter/cost_profile.h"
#include "adapter/output_predictor.h"
#include "tempokv/executor.h"
#include "tempokv/runtime_snapshot.h"

namespace tempokv {

class TtuEstimator {
 public:
  // wait_quantile: how the requests ahead's outputs are projected: 0 takes the predictor's
  // conditional mean (remaining()), q in (0, 1] its conditional q-quantile (remaining_quantile()).
  // order_statistics: the requests decoding at the snapshot (2 to kMaxOrderSlots of them) complete
  // instead at the expected order statistics of their remaining outputs under the predictor's
  // conditional distributions (conditional_atoms(), kOrderAtoms atoms each; order_statistics.h):
  // the j-th smallest conditional mean is replaced by E[j-th first completion], so the first slot
  // frees at E[min] rather than at the first of the means. The statistics' sum is the means' sum
  // (the same decode work). Requests that join the projection later keep their means.
  TtuEstimator(const CostProfile& profile, const OutputPredictor& predictor,
               double wait_quantile = 0, bool order_statistics = false)
      : profile_(profile),
        predictor_(predictor),
        wait_quantile_(wait_quantile),
        order_statistics_(order_statistics) {}

  // Bounds on the order-statistics projection's cost, O(slots² · atoms · log) per estimate: with
  // more decoders than this it falls back to the means.
  static constexpr uint32_t kMaxOrderSlots = 8;
  static constexpr uint32_t kOrderAtoms = 16;

  // KV-pressure preemption, as the runtime showed it (RuntimeAdapter::preempted): a decode step
  // that starts with the batch's summed context above `context_tokens` preempts the youngest
  // decoder not yet preempted in this episode of pressure, which recomputes its context in the
  // step (a prefill of it, vLLM's recompute preemption); the episode ends at a step at or below
  // the line. 0: none (the default). A run of decode steps stops before the step that crosses
  // the line and goes one step at a time while a decoder is left to preempt.
  void set_preemption_line(uint64_t context_tokens) { preemption_line_ = context_tokens; }
  uint64_t preemption_line() const { return preemption_line_; }

  // ttu[i] is the TTU of snapshot.waiting[i], measured from the moment the snapshot was taken.
  // Requests not admitted by the first boundary past `horizon` (and past the admission of
  // waiting[exact_through - 1]) get that boundary (a lower bound).
  // admission_context (optional; the emulated engine's rule, not async loads): for each waiting
  // request admitted in the projection, the summed context of the slots right after its admission
  // (the decoders' and the admitted requests' not yet prefilled, its own prompt included): the
  // batch it will decode in; 0 for one not admitted before the horizon.
  // exact_through: the projection goes past `horizon` until snapshot.waiting[0, exact_through)
  // have their exact TTUs (those a controller's chain of deadlines reads, wherever they lie).
  std::vector<Duration> estimate(const RuntimeSnapshot& snapshot,
                                 Duration horizon = Duration::max(),
                                 std::vector<uint64_t>* admission_context = nullptr,
                                 size_t exact_through = 0) const;

 private:
  // Tokens still to generate by a request ahead with `generated` tokens so far.
  uint32_t remaining(uint32_t generated, uint32_t limit) const {
    return wait_quantile_ > 0 ? predictor_.remaining_quantile(generated, limit, wait_quantile_)
                              : predictor_.remaining(generated, limit);
  }

  const CostProfile& profile_;
  const OutputPredictor& predictor_;
  double wait_quantile_;
  bool order_statistics_;
  uint64_t preemption_line_ = 0;
};

}  // namespace tempokv
