// The control plane's CPU per scheduler step (protocol v2's `step` op, issue 13's target: <= 50 µs
// at 256 running + 1,000 waiting): what ServiceCore::step asks of the adapter for one iteration of
// a runtime with 256 decoders and 1,000 waiting requests — a token for each decoder, the iteration
// that starts, and the new waiting order (the TTU projection of the whole queue and the
// controller's update and reevaluation under the tempokv policy). Without the protocol decode and
// the session checks (scripts/service-step-cost measures the daemon end to end).
//
// Arg `hits`: 0 = no request has a hit (scripts/service-step-cost's load); 1 = every waiting
// request has a planned claim of 1-8 chunks (TTU updates for all 1,000). Each step is 20 ms of
// virtual time after the one before, and the timers due in between (the controller's tick and
// wake-ups) run inside the measured loop: they are the daemon's CPU too.
//
// Arg `steady`: 0 = 20 ms steps, about an eighth of what the profile says a decode step of 256
// sequences at 4K context costs (~160 ms), so the adapter's calibration keeps moving the cost
// scale and every projected use drifts earlier at each step (the controller re-keys claims); 1 =
// each step lasts the profile's cost of the iteration it ends (a runtime the profile fits: the
// calibration stays at 1 and projected uses stand still as the queue ages).
//
//   cmake -G Ninja -B build/release -DCMAKE_BUILD_TYPE=Release && ninja -C build/release step_bench
//   build/release/bench/step_bench
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "adapter/runtime_adapter.h"
#include "bench_stack.h"
#include "controller/controller.h"

namespace tempokv {
namespace {

using bench::kObj;
using bench::must;
constexpr uint64_t kRunning = 256;

CostProfile llama_profile() {  // profiles/h100-llama-3.1-8b.json
  CostProfile p;
  p.name = "h100-llama-3.1-8b";
  p.model = "llama-3.1-8b";
  p.kv_bytes_per_token = 131072;
  p.prefill_a_s = 0.015;
  p.prefill_b_s_per_token = 2.5e-05;
  p.prefill_c_s_per_token2 = 8.7e-10;
  p.decode_a_s = 0.012;
  p.decode_b_s_per_context_token = 6.55e-08;
  p.decode_c_s_per_seq = 0.0003;
  p.retrieval_latency_s = 0.001;
  p.retrieval_bytes_per_s = 17.5e9;
  return p;  // no KV capacity limit: 256 slots of 4K-token prompts
}

void BM_Step(benchmark::State& state) {
  const bool hits = state.range(0) != 0;
  const auto waiting_n = static_cast<uint64_t>(state.range(3));
  bench::Stack s(bench::StackOptions{4096, 4096, 2048, 16, 11.0 * double(kGiB)});
  const bool rhythm = state.range(4) != 0;
  ControllerOptions co;
  co.ttu_horizon = state.range(1) != 0;
  co.chain_skips_bounds = rhythm;
  Controller controller(s.ex, *s.provider, make_commit_policy("tempokv").value(), co);
  const CostProfile profile = llama_profile();
  AdapterOptions ao;
  ao.max_active = kRunning;
  ao.rhythm_horizon = rhythm;
  auto adapter = must(RuntimeAdapter::create(controller, profile, ao));
  std::vector<uint64_t> running, waiting;
  for (uint64_t id = 1; id <= kRunning + waiting_n; ++id) {
    const uint32_t chunks = hits && id > kRunning ? 1 + id % 8 : 0;
    RequestInfo info{id, 4096, chunks * 256, chunks * kObj, 128};
    must(adapter->add_request(info));
    if (chunks > 0) {
      std::vector<ManifestEntry> m;
      const uint64_t first = (id * 7) % 4000;
      for (uint64_t i = first; i < first + chunks; ++i) m.push_back({Key{1, i}, kObj});
      must(adapter->report_hit(id, std::move(m)));
    }
    (id <= kRunning ? running : waiting).push_back(id);
  }
  // The running requests are admitted and prefilled: decode steps from here on.
  for (uint64_t id : running) must(adapter->admitted(id));
  must(adapter->iteration_started(running, {}));
  for (uint64_t id : running) must(adapter->prefill_done(id));
  const bool steady = state.range(2) != 0;
  uint32_t generated = 1;
  // The iteration started last: its decoders' context and the profile's cost of it.
  auto step_cost = [&] {
    if (!steady) return Duration(std::chrono::milliseconds(20));
    return profile.decode_step(kRunning * (4096 + uint64_t{generated}), kRunning);
  };
  for (auto _ : state) {
    s.ex.run_for(step_cost());
    ++generated;
    for (uint64_t id : running) must(adapter->tokens_generated(id, generated));
    must(adapter->iteration_started({}, running));
    must(adapter->update_order(waiting));
    if (generated == 100) generated = 1;  // stay below the generation limit
  }
  state.counters["planned"] =
      static_cast<double>(controller.stats().reported - controller.stats().commits);
}
// Arg `horizon`: ControllerOptions::ttu_horizon (on by default).
// Arg `waiting`: waiting requests (1,000 is issue 13's load; with hits, as many planned claims).
// Arg `rhythm`: AdapterOptions::rhythm_horizon (on by default; with it, the controller's
// chain_skips_bounds, as tempokvd sets them).
BENCHMARK(BM_Step)
    ->ArgNames({"hits", "horizon", "steady", "waiting", "rhythm"})
    ->Args({0, 0, 0, 1'000, 1})
    ->Args({1, 0, 0, 1'000, 1})
    ->Args({0, 1, 0, 1'000, 1})
    ->Args({1, 1, 0, 1'000, 1})
    ->Args({0, 1, 1, 1'000, 1})
    ->ArgsProduct({{1}, {1}, {1}, {1'000, 10'000, 100'000}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tempokv
