// StepJitter: how far an emulated step's actual time strays from its cost profile, so the TTU
// estimator (which projects with the profile) is honestly imperfect. Each draw multiplies a
// duration by exp(σ·z − σ²/2) with z standard normal (a lognormal factor of mean 1), from a seeded
// splitmix64 stream with Box–Muller, so a run repeats exactly for a seed on any platform. σ = 0
// returns durations unchanged (exact tests). Not thread-safe; one per engine.
#pragma once

#include <cstdint>

#include "tempokv/executor.h"

namespace tempokv {

class StepJitter {
 public:
  StepJitter(double sigma, uint64_t seed) : sigma_(sigma), state_(seed ^ 0x6a6974746572ULL) {}
  Duration apply(Duration d);
  double sigma() const { return sigma_; }

 private:
  double normal();
  double sigma_;
  uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace tempokv
