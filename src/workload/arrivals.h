// Arrival processes of a workload (DESIGN.md §2 Workloads): a fixed interval, Poisson (seeded
// exponential gaps) and timestamps (the offsets the requests already carry, e.g. from a trace,
// scaled). assign_arrivals() rewrites Request::arrival in request order.
// Free functions over values; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tempokv/executor.h"
#include "tempokv/status.h"
#include "workload/request.h"

namespace tempokv {

enum class ArrivalKind { kFixed, kPoisson, kTimestamps };

struct ArrivalOptions {
  ArrivalKind kind = ArrivalKind::kFixed;
  Duration interval = std::chrono::milliseconds(500);  // kFixed: request i arrives at i × interval
  double rate_per_s = 2.0;  // kPoisson: mean arrivals per second; the first arrives at 0
  uint64_t seed = 1;        // kPoisson
  double time_scale = 1.0;  // kTimestamps: arrival × time_scale
  Status validate() const;
};

// "fixed", "poisson", "timestamps"; the error names the text and the accepted names.
Result<ArrivalKind> parse_arrival_kind(std::string_view name);
std::string_view arrival_kind_name(ArrivalKind kind);

Status assign_arrivals(std::vector<Request>& requests, const ArrivalOptions& options);

}  // namespace tempokv
