// The small NarrativeQA-like workload the real-mode engine tests run (in-process and through
// tempokvd): two document groups, two documents each, a few output tokens.
#pragma once

#include <chrono>
#include <vector>

#include "adapter/cost_profile.h"
#include "workload/narrativeqa.h"

namespace tempokv {

inline std::vector<Request> small_real_workload(const CostProfile& profile) {
  NarrativeQaOptions no;
  no.model = profile.model;
  no.kv_bytes_per_token = profile.kv_bytes_per_token;
  no.groups = {{2'000, 3'000}, {4'000, 6'000}};
  no.docs_per_group = 2;
  no.interval = std::chrono::milliseconds(20);
  no.max_output_tokens = 8;
  no.output_min_tokens = 4;
  return make_narrativeqa(no).value();
}

}  // namespace tempokv
