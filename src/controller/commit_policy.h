// CommitPolicy: when a planned claim may try to commit (DESIGN.md §3). Policies differ only in
// eligibility; the controller, provider, checks and paths are shared. A claim whose retrieval is
// requested is eligible under every policy (the controller handles that before asking).
// Eligibility permits an attempt; the provider decides whether it succeeds.
//
// Besides eligibility, a policy tells the controller which claims it need not look at, so an
// evaluation costs little with thousands of planned claims: rank_limit() for rank-based policies,
// ttr_bound() for timed ones. Both are bounds, never decisions: eligible() stays the authority.
//
// One file per policy; make_commit_policy() builds one from its name. Stateless and const.
// TempoKV's variants (tempokv_configurations()) are its policy with some controller and adapter
// options switched off.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tempokv/executor.h"
#include "tempokv/status.h"

namespace tempokv {

// What a policy may look at. ttr and static_ttr are computed only when the policy asks.
struct EligibilityInput {
  Duration ttu;           // the runtime's latest TTU, aged by the time since it was reported
  uint32_t waiting_rank;  // position in the runtime's waiting order (0 = next); UINT32_MAX unknown
  const std::function<Duration()>& ttr;         // provider's state-aware TTR
  const std::function<Duration()>& static_ttr;  // non-resident bytes / fixed rate
  // How much later than projected recent timed commits became ready relative to their use
  // (ErrorFeedback::margin(); zero without feedback). Policies that fold it in commit that much
  // earlier.
  Duration margin{0};
};

// Upper bounds of the two TTRs for any claim whose footprint is at most the largest planned one.
struct TtrBoundInput {
  const std::function<Duration()>& ttr;         // bounds EligibilityInput::ttr
  const std::function<Duration()>& static_ttr;  // bounds EligibilityInput::static_ttr
  Duration margin{0};                           // EligibilityInput::margin
};

// rank_limit() of a policy that may find any claim eligible, ranked or not.
inline constexpr uint32_t kAnyRank = UINT32_MAX;

class CommitPolicy {
 public:
  virtual ~CommitPolicy() = default;
  virtual std::string_view name() const = 0;
  virtual bool eligible(const EligibilityInput& in) const = 0;
  // True when eligibility depends on TTU and TTR: laxity() then tells how long until it may become
  // eligible if nothing else changes, so the controller can wake exactly then.
  virtual bool timed() const { return false; }
  // TempoKV's rule (either TTR): the controller also applies the mechanisms that look at the
  // reads queued ahead of a claim, each switched by its ControllerOptions: the commit wait
  // (wait_for_reads_ahead) and chained deadlines (chain_deadlines).
  virtual bool state_aware() const { return false; }
  // Estimated laxity TTU − TTR (timed policies only). Nonincreasing in ttr and static_ttr: given
  // upper bounds of both it gives a lower bound (how the controller skips claims cheaply).
  virtual Duration laxity(const EligibilityInput&) const { return Duration::zero(); }
  // laxity() for TTRs already known (or bounds of them), without calls through the input's
  // functions: the controller's window walk asks it several times per claim. Equal to laxity() of
  // the input with those values (policies override both together).
  virtual Duration laxity_given(Duration ttu, uint32_t waiting_rank, Duration ttr,
                                Duration static_ttr, Duration margin) const;
  // Untimed policies: only claims ranked below this in their runtime's waiting order can be
  // eligible (0: none before retrieval is requested; kAnyRank: any claim, unranked included).
  virtual uint32_t rank_limit() const { return kAnyRank; }
  // Timed policies: an upper bound of the TTR laxity() would use for any planned claim; a claim
  // whose aged TTU exceeds it cannot be eligible. Duration::max() when unknown (every claim is
  // then examined).
  virtual Duration ttr_bound(const TtrBoundInput&) const { return Duration::max(); }
};

std::unique_ptr<CommitPolicy> make_demand_policy();
std::unique_ptr<CommitPolicy> make_immediate_policy();
std::unique_ptr<CommitPolicy> make_queue_policy(uint32_t k);
// TempoKV's rule with the provider's state-aware TTR, or (false) with non-resident bytes over a
// fixed rate: "tempokv-no-state-ttr".
std::unique_ptr<CommitPolicy> make_tempokv_policy(bool state_aware_ttr = true);
// "demand", "immediate", "queue-K" (K ≥ 1), "tempokv", "tempokv-no-state-ttr".
Result<std::unique_ptr<CommitPolicy>> make_commit_policy(std::string_view name);

// TempoKV's mechanisms, each of which a configuration switches on or off alone ("tempokv" has
// every one on; make_controller() applies them).
struct TempoKvSwitches {
  bool error_feedback = true;     // recent timing error folded into the laxity (ErrorFeedback)
  bool commit_wait = true;        // ControllerOptions::wait_for_reads_ahead
  bool chained_deadlines = true;  // ControllerOptions::chain_deadlines
  // The runtimes project the queue wait with the expected order statistics of the decoders'
  // completions, not their conditional means (AdapterOptions::wait_order_statistics).
  bool order_statistics = true;
  // The laxity's TTR is the provider's projection of the staging state; off: the claim's
  // non-resident bytes over a fixed rate (make_tempokv_policy(false)).
  bool state_aware_ttr = true;
  // The provider issues committed reads in commit order (IssueOrder::kCommit): a later commit
  // never passes a committed claim's reads, so its TTR at commit stands; off (TempoKV's default):
  // in use order, a claim needed sooner goes first (not an ablation: "tempokv-commit-order" has
  // it on; docs/evaluation.md, "Issue order").
  bool commit_order = false;
  bool progressive_release = false;  // ControllerOptions::progressive_release (not an ablation)
  bool operator==(const TempoKvSwitches&) const = default;
};

struct TempoKvConfiguration {
  std::string_view name;
  std::string_view without;  // the mechanism it switches off ("" for tempokv, -progressive)
  TempoKvSwitches switches;
};

// "tempokv" and its variants: the ablations, each TempoKV with exactly one mechanism off
// ("tempokv-static": without error feedback; "tempokv-no-wait", "tempokv-no-chain",
// "tempokv-no-order-stats", "tempokv-no-state-ttr"), and two variants: "tempokv-progressive" and
// "tempokv-commit-order". The one list:
// make_controller(), the eval and tempokvd read it.
std::span<const TempoKvConfiguration> tempokv_configurations();
// The entry of that name; nullptr for any other name.
const TempoKvConfiguration* find_tempokv_configuration(std::string_view name);
// The names of the ablations above, in table order.
std::vector<std::string> tempokv_ablations();

}  // namespace tempokv
