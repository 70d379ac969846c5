// TempoKV-Static: the laxity rule with a TTR that ignores staging state: the claim's
// non-resident bytes over a fixed, premeasured rate (the paper's ablation).
#include "controller/commit_policy.h"

namespace tempokv {
namespace {

class TempoKvStaticPolicy final : public CommitPolicy {
 public:
  std::string_view name() const override { return "tempokv-static"; }
  bool eligible(const EligibilityInput& in) const override { return laxity(in) <= Duration::zero(); }
  Duration laxity(const EligibilityInput& in) const override {
    return laxity_given(in.ttu, in.waiting_rank, Duration::zero(), in.static_ttr(), in.margin);
  }
  Duration laxity_given(Duration ttu, uint32_t, Duration, Duration static_ttr,
                        Duration) const override {
    return ttu - static_ttr;
  }
  bool timed() const override { return true; }
  Duration ttr_bound(const TtrBoundInput& in) const override { return in.static_ttr(); }
};

}  // namespace

std::unique_ptr<CommitPolicy> make_tempokv_static_policy() {
  return std::make_unique<TempoKvStaticPolicy>();
}

}  // namespace tempokv
