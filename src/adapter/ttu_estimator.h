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
// order while slots are free. An iteration that admits requests runs, in order, their retrievals
// (one after another), their prefills, and one decode step of the requests already decoding; a
// prefill produces the request's first token. An iteration without admissions is one decode step
// of the whole batch; the projection jumps over runs of such steps in closed form, so its cost is
// linear in the number of requests, not tokens.
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
