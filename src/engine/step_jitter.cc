#include "engine/step_jitter.h"

#include <cmath>
#include <numbers>

#include "common/splitmix.h"

namespace tempokv {

double StepJitter::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u1 = uniform01(state_);
  double u2 = uniform01(state_);
  if (u1 < 1e-300) u1 = 1e-300;
  double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = r * std::sin(2 * std::numbers::pi * u2);
  has_spare_ = true;
  return r * std::cos(2 * std::numbers::pi * u2);
}

Duration StepJitter::apply(Duration d) {
  if (sigma_ <= 0 || d <= Duration::zero()) return d;
  double factor = std::exp(sigma_ * normal() - sigma_ * sigma_ / 2);
  return from_seconds(to_seconds(d) * factor);
}

}  // namespace tempokv
