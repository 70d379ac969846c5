// Immediate: eligible as soon as the hit is reported.
#include "controller/commit_policy.h"

namespace tempokv {
namespace {

class ImmediatePolicy final : public CommitPolicy {
 public:
  std::string_view name() const override { return "immediate"; }
  bool eligible(const EligibilityInput&) const override { return true; }
};

}  // namespace

std::unique_ptr<CommitPolicy> make_immediate_policy() {
  return std::make_unique<ImmediatePolicy>();
}

}  // namespace tempokv
