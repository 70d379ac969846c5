// TempoKV: eligible when the estimated laxity TTU − TTR is at most zero, with the provider's
// state-aware TTR (queue, concurrency, calibrated rate, shared staging, residency), less the
// margin of recent timing error (error_feedback.h): the laxity the claim would show if it erred as
// recent ones did.
#include <algorithm>

#include "controller/commit_policy.h"

namespace tempokv {
namespace {

class TempoKvPolicy final : public CommitPolicy {
 public:
  std::string_view name() const override { return "tempokv"; }
  bool eligible(const EligibilityInput& in) const override { return laxity(in) <= Duration::zero(); }
  Duration laxity(const EligibilityInput& in) const override {
    return laxity_given(in.ttu, in.waiting_rank, in.ttr(), Duration::zero(), in.margin);
  }
  Duration laxity_given(Duration ttu, uint32_t, Duration ttr, Duration,
                        Duration margin) const override {
    return ttu - ttr - margin;
  }
  bool timed() const override { return true; }
  bool state_aware() const override { return true; }
  Duration ttr_bound(const TtrBoundInput& in) const override {
    return in.ttr() + std::max(Duration::zero(), in.margin);
  }
};

}  // namespace

std::unique_ptr<CommitPolicy> make_tempokv_policy() { return std::make_unique<TempoKvPolicy>(); }

}  // namespace tempokv
