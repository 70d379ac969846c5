// Demand: never eligible before retrieval is requested (the controller makes a requested claim
// eligible under every policy), so staging starts exactly when the runtime asks for the KV.
#include "controller/commit_policy.h"

namespace tempokv {
namespace {

class DemandPolicy final : public CommitPolicy {
 public:
  std::string_view name() const override { return "demand"; }
  bool eligible(const EligibilityInput&) const override { return false; }
  uint32_t rank_limit() const override { return 0; }
};

}  // namespace

std::unique_ptr<CommitPolicy> make_demand_policy() { return std::make_unique<DemandPolicy>(); }

}  // namespace tempokv
