#include "workload/arrivals.h"

#include <cmath>
#include <string>

#include "common/splitmix.h"

namespace tempokv {

Status ArrivalOptions::validate() const {
  if (interval < Duration::zero()) {
    return Status::invalid_argument("ArrivalOptions.interval must not be negative");
  }
  if (kind == ArrivalKind::kPoisson && !(rate_per_s > 0 && std::isfinite(rate_per_s))) {
    return Status::invalid_argument("ArrivalOptions.rate_per_s must be positive");
  }
  if (!(time_scale > 0 && std::isfinite(time_scale))) {
    return Status::invalid_argument("ArrivalOptions.time_scale must be positive");
  }
  return Status::ok();
}

Result<ArrivalKind> parse_arrival_kind(std::string_view name) {
  if (name == "fixed") return ArrivalKind::kFixed;
  if (name == "poisson") return ArrivalKind::kPoisson;
  if (name == "timestamps") return ArrivalKind::kTimestamps;
  return Status::invalid_argument("unknown arrival process '" + std::string(name) +
                                  "' (known: fixed, poisson, timestamps)");
}

std::string_view arrival_kind_name(ArrivalKind kind) {
  switch (kind) {
    case ArrivalKind::kFixed:
      return "fixed";
    case ArrivalKind::kPoisson:
      return "poisson";
    case ArrivalKind::kTimestamps:
      return "timestamps";
  }
  return "?";
}

Status assign_arrivals(std::vector<Request>& requests, const ArrivalOptions& o) {
  TEMPOKV_RETURN_IF_ERROR(o.validate());
  uint64_t rng = o.seed * 0x2545f4914f6cdd1dULL + 0x706fULL;
  double t_s = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    switch (o.kind) {
      case ArrivalKind::kFixed:
        requests[i].arrival = o.interval * static_cast<int64_t>(i);
        break;
      case ArrivalKind::kPoisson:
        if (i > 0) t_s += -std::log1p(-uniform01(rng)) / o.rate_per_s;
        requests[i].arrival = from_seconds(t_s);
        break;
      case ArrivalKind::kTimestamps:
        requests[i].arrival = from_seconds(to_seconds(requests[i].arrival) * o.time_scale);
        break;
    }
  }
  return Status::ok();
}

}  // namespace tempokv
