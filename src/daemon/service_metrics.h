// What ServiceCore reports: one list of metrics (name, help, type, labels, value) that the stats
// op flattens and /metrics renders in the Prometheus text format, and the histograms of how far
// the controller's projections were off (TTR: ready - committed - TTR at commit; TTU: retrieval
// requested - the use time projected at commit; seconds, positive = later than projected).
// Internal to the service; the Executor's thread only.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "daemon/prometheus.h"
#include "daemon/service_core.h"

namespace tempokv::service {

struct Metric {
  std::string name;  // Prometheus name without the tempokv_ prefix
  std::string help;
  MetricType type = MetricType::kGauge;
  Labels labels;
  double value = 0;
};

struct ServiceCore::Histograms {
  // Signed errors in seconds, from 10 ms to 10 s either way.
  static std::vector<double> error_bounds();
  Histogram ttr_error{error_bounds()};
  Histogram ttu_error{error_bounds()};
  // Lateness of a committed claim: ready - retrieval requested (positive: the engine waited).
  Histogram lateness{error_bounds()};
  // The last kRecent observations of each, for exact quantiles (p50, p95) in the stats.
  static constexpr size_t kRecent = 4096;
  struct Recent {
    std::vector<double> values;
    size_t next = 0;
    void add(double v);
  };
  Recent ttr_recent, ttu_recent, lateness_recent;
  // The last kEndedClaims claims that ended (record_claim_end), for /claims.
  static constexpr size_t kEndedClaims = 4096;
  struct Ended {
    uint64_t request_id = 0;  // the runtime's own id (the daemon-wide one if it has no owner)
    std::string runtime;
    ClaimInfo info;
  };
  std::deque<Ended> ended;
  uint64_t timed_claims = 0;  // committed claims whose retrieval was requested and that got ready
  uint64_t late_claims = 0;   // of those, ready after the retrieval request
};

}  // namespace tempokv::service
