// The runtime adapter's tests' fixture: the simulated stack, a controller and an adapter whose
// profile costs 10 ms per decode step and nothing else.
#pragma once

#include <memory>

#include "adapter/runtime_adapter.h"
#include "provider/sim_fixture.h"

namespace tempokv::adapter_testing {

inline CostProfile step_profile() {
  CostProfile p;
  p.name = "steps";
  p.kv_bytes_per_token = 1;
  p.decode_a_s = 0.010;  // 10 ms per decode step, nothing else
  p.retrieval_bytes_per_s = 1e18;
  return p;
}

struct AdapterFixture {
  explicit AdapterFixture(ControllerOptions co = {}) {
    controller = std::make_unique<Controller>(stack.ex, *stack.provider,
                                              make_commit_policy("tempokv").value(), co);
    AdapterOptions o;
    o.max_active = 1;
    o.prior_output_tokens = 100;
    adapter = RuntimeAdapter::create(*controller, profile, o).value();
  }
  testing::SimStack stack;
  CostProfile profile = step_profile();
  std::unique_ptr<Controller> controller;
  std::unique_ptr<RuntimeAdapter> adapter;
};

}  // namespace tempokv::adapter_testing
