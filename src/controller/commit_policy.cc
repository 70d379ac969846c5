#include "controller/commit_policy.h"

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
  if (name == "tempokv-static") return make_tempokv_static_policy();
  if (name == "tempokv") return make_tempokv_policy();
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
      "' (expected demand, immediate, queue-K with K >= 1, tempokv-static or tempokv)");
}

}  // namespace tempokv
