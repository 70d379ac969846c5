#include "provider/provider_options.h"

#include <cmath>
#include <string>

namespace tempokv {
namespace {

Status bad(const char* field, const std::string& rule, const std::string& got) {
  return Status::invalid_argument("ProviderOptions." + std::string(field) + " must be " + rule +
                                  " (got " + got + ")");
}

bool positive_finite(double v) { return std::isfinite(v) && v > 0; }

}  // namespace

Status ProviderOptions::validate() const {
  if (max_reads_in_flight < 1 || max_reads_in_flight > 4096) {
    return bad("max_reads_in_flight", "in [1, 4096]", std::to_string(max_reads_in_flight));
  }
  if (!positive_finite(prior_read_bytes_per_s)) {
    return bad("prior_read_bytes_per_s", "a positive, finite rate",
               std::to_string(prior_read_bytes_per_s));
  }
  if (!positive_finite(static_read_bytes_per_s)) {
    return bad("static_read_bytes_per_s", "a positive, finite rate",
               std::to_string(static_read_bytes_per_s));
  }
  if (calibration_sample <= Duration::zero()) {
    return bad("calibration_sample", "positive",
               std::to_string(calibration_sample.count()) + " ns");
  }
  if (!(calibration_weight >= 0 && calibration_weight <= 1)) {
    return bad("calibration_weight", "in [0, 1]", std::to_string(calibration_weight));
  }
  if (!(std::isfinite(write_cost) && write_cost >= 0)) {
    return bad("write_cost", "finite and >= 0", std::to_string(write_cost));
  }
  return Status::ok();
}

}  // namespace tempokv
