// A controller on the simulated stack (tests/provider/sim_fixture.h) and a scripted runtime that
// drives it: one 64 MiB object alone takes 62.5 ms; two in flight share 1 GiB/s and both finish
// at 125 ms.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "adapter/cost_profile.h"
#include "controller/controller.h"
#include "provider/sim_fixture.h"

namespace tempokv::testing {

inline std::vector<ManifestEntry> manifest(std::vector<uint64_t> objects) {
  return claim_of(0, std::move(objects)).objects;
}

// A runtime's profile for the adapter tests: 10 ms decode steps, retrieval at no cost.
inline CostProfile steps_profile() {
  CostProfile profile;
  profile.name = "steps";
  profile.kv_bytes_per_token = 1;
  profile.decode_a_s = 0.010;
  profile.retrieval_bytes_per_s = 1e18;
  return profile;
}

struct Fixture {
  explicit Fixture(const char* policy, SimStackOptions o = {}, ControllerOptions co = {})
      : stack(o) {
    controller = std::make_unique<Controller>(stack.ex, *stack.provider,
                                              make_commit_policy(policy).value(), co);
  }
  TimePoint at(Duration d) const { return stack.t0 + d; }
  void run_to(Duration d) { stack.ex.run_until(at(d)); }
  ClaimInfo info(ClaimId id) { return controller->info(id).value(); }
  // Time since t0 of a timeline entry (-1 ns when unset), for readable expectations.
  Duration since(const std::optional<TimePoint>& t) const {
    return t ? *t - stack.t0 : Duration(-1);
  }

  SimStack stack;
  std::unique_ptr<Controller> controller;
  std::map<ClaimId, std::pair<TimePoint, Result<RetrievalPath>>> answers;
  RetrievalCallback recorder() {
    return [this](ClaimId id, Result<RetrievalPath> p) {
      answers.insert_or_assign(id, std::make_pair(stack.ex.now(), std::move(p)));
    };
  }

  // The runtime's side of a retrieval: request it now; once the KV may be copied, copy it for
  // `copy` and end the transfer (releasing the claim).
  void retrieve(ClaimId id, Duration copy) {
    auto start = [this, id, copy] {
      ASSERT_TRUE(controller->begin_transfer(id).is_ok()) << id;
      stack.ex.after(copy, [this, id] { ASSERT_TRUE(controller->end_transfer(id).is_ok()) << id; });
    };
    auto answer = controller->request_retrieval(id, [start](ClaimId, Result<RetrievalPath> p) {
      ASSERT_TRUE(p.is_ok());
      start();
    });
    ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
    if (*answer != RetrievalAnswer::kWait) start();
  }
};

}  // namespace tempokv::testing
