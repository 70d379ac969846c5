// The TTU estimators' tests' cost profile: round numbers so expected times are exact.
#pragma once

#include "adapter/cost_profile.h"

namespace tempokv::testing_profiles {

// Prefill 10 ms + 1 ms/token, decode step 20 ms, retrieval 1 GB/s.
inline CostProfile simple_profile() {
  CostProfile p;
  p.name = "test";
  p.model = "test-model";
  p.kv_bytes_per_token = 1000;
  p.prefill_a_s = 0.010;
  p.prefill_b_s_per_token = 0.001;
  p.decode_a_s = 0.020;
  p.retrieval_bytes_per_s = 1e9;
  return p;
}

}  // namespace tempokv::testing_profiles
