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
  TtuEstimator(const CostProfile& profile, const OutputPredictor& predictor)
      : profile_(profile), predictor_(predictor) {}

  // ttu[i] is the TTU of snapshot.waiting[i], measured from the moment the snapshot was taken.
  std::vector<Duration> estimate(const RuntimeSnapshot& snapshot) const;

 private:
  const CostProfile& profile_;
  const OutputPredictor& predictor_;
};

}  // namespace tempokv
