// TempoKV: eligible when the estimated laxity TTU − TTR is at most zero, less the margin of recent
// timing error (error_feedback.h): the laxity the claim would show if it erred as recent ones did.
// The TTR is the provider's state-aware projection (queue, concurrency, calibrated rate, shared
// staging, residency); "tempokv-no-state-ttr" takes the claim's non-resident bytes over a fixed,
// premeasured rate instead (StagingProvider::static_ttr), its only difference.
#include <algorithm>

#include "controller/commit_policy.h"

namespace tempokv {
namespace {

class TempoKvPolicy final : public CommitPolicy {
 public:
  explicit TempoKvPolicy(bool state_aware_ttr) : state_aware_ttr_(state_aware_ttr) {}
  std::string_view name() const override {
    return state_aware_ttr_ ? "tempokv" : "tempokv-no-state-ttr";
  }
  bool eligible(const EligibilityInput& in) const override { return laxity(in) <= Duration::zero(); }
  Duration laxity(const EligibilityInput& in) const override {
    return state_aware_ttr_ ? in.ttu - in.ttr() - in.margin : in.ttu - in.static_ttr() - in.margin;
  }
  Duration laxity_given(Duration ttu, uint32_t, Duration ttr, Duration static_ttr,
                        Duration margin) const override {
    return ttu - (state_aware_ttr_ ? ttr : static_ttr) - margin;
  }
  bool timed() const override { return true; }
  bool state_aware() const override { return true; }
  Duration ttr_bound(const TtrBoundInput& in) const override {
    return (state_aware_ttr_ ? in.ttr() : in.static_ttr()) + std::max(Duration::zero(), in.margin);
  }

 private:
  const bool state_aware_ttr_;
};

}  // namespace

std::unique_ptr<CommitPolicy> make_tempokv_policy(bool state_aware_ttr) {
  return std::make_unique<TempoKvPolicy>(state_aware_ttr);
}

}  // namespace tempokv
