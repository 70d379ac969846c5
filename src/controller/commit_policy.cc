#include "controller/commit_policy.h"

#include <algorithm>
#include <charconv>

namespace tempokv {

Duration CommitPolicy::laxity_given(Duration ttu, uint32_t waiting_rank, Duration ttr,
                                    Duration static_ttr, Duration margin) const {
  const std::function<Duration()> ttr_at = [ttr] { return ttr; };
  const std::function<Duration()> static_at = [static_ttr] { return static_ttr; };
  return laxity(EligibilityInput{ttu, waiting_rank, ttr_at, static_at, margin});
}

Result<std::unique_ptr<CommitPolicy>> make_commit_policy(std::string_view name) {
  if (name == "demand") return make_demand_policy();
  if (name == "immediate") return make_immediate_policy();
  if (name == "tempokv") return make_tempokv_policy(true);
  if (name == "tempokv-no-state-ttr") return make_tempokv_policy(false);
  if (name.starts_with("queue-")) {
    uint32_t k = 0;
    auto digits = name.substr(6);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), k);
    if (ec == std::errc() && end == digits.data() + digits.size() && k >= 1) {
      return make_queue_policy(k);
    }
  }
  return Status::invalid_argument(
      "unknown commit policy '" + std::string(name) +
      "' (expected demand, immediate, queue-K with K >= 1, tempokv or tempokv-no-state-ttr)");
}

namespace {

constexpr TempoKvSwitches kAllOn{};

constexpr TempoKvSwitches without(bool TempoKvSwitches::*mechanism) {
  TempoKvSwitches s;
  s.*mechanism = false;
  return s;
}

const TempoKvConfiguration kConfigurations[] = {
    {"tempokv", "", kAllOn},
    {"tempokv-static", "error feedback", without(&TempoKvSwitches::error_feedback)},
    {"tempokv-no-wait", "commit wait", without(&TempoKvSwitches::commit_wait)},
    {"tempokv-no-chain", "chained deadlines", without(&TempoKvSwitches::chained_deadlines)},
    {"tempokv-no-order-stats", "order statistics", without(&TempoKvSwitches::order_statistics)},
    {"tempokv-no-state-ttr", "state-aware TTR", without(&TempoKvSwitches::state_aware_ttr)},
    {"tempokv-progressive", "", {.progressive_release = true}},
    {"tempokv-commit-order", "", {.commit_order = true}},
};

}  // namespace

std::span<const TempoKvConfiguration> tempokv_configurations() { return kConfigurations; }

const TempoKvConfiguration* find_tempokv_configuration(std::string_view name) {
  auto it = std::find_if(std::begin(kConfigurations), std::end(kConfigurations),
                         [name](const TempoKvConfiguration& c) { return c.name == name; });
  return it == std::end(kConfigurations) ? nullptr : &*it;
}

std::vector<std::string> tempokv_ablations() {
  std::vector<std::string> names;
  for (const TempoKvConfiguration& c : kConfigurations) {
    if (!c.without.empty()) names.emplace_back(c.name);
  }
  return names;
}

}  // namespace tempokv
