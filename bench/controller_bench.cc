// Controller micro-benchmarks: the cost of one control-plane event with 1,000, 10,000 or 100,000
// (Arg `claims`) outstanding planned claims under the tempokv policy, on the simulated stack
// (SimExecutor, simulated SSD engine at 4 GiB/s, simulated store, metadata-only fast tier,
// staging provider with reads queued). Claims are 1-8 chunks of 32 MiB sharing prefixes; their
// TTUs are spaced `spacing_ms` apart from 0.5 s on (Arg), so the index's TTR window (the 640 ms backlog plus the largest
// claim's 62.5 ms) holds about window / spacing claims; those already eligible commit at setup.
// Claims arrive at 144 MiB per spacing on average: 2.8 GiB/s at 50 ms, 3.5 GiB/s at 40 ms.
// At 20 ms they arrive at 7 GiB/s, faster than the device reads: the queue grows seconds deep,
// the budget stays full and most claims are refused (parked) or go ordinary. An event there costs
// the window's TTR ranges (nearly exact with one read size, so almost no claim needs an exact
// TTR), the exact projection of the claim whose laxity reaches zero next (its wake-up, when that
// comes before the tick), the exact TTR of each commit, and after each release the parked claims
// whose bound of their share fits the room freed, walked in attempt order only up to the first
// commit, which takes that room again (Controller::find_fitting). With the commit wait (the
// default), the eligible claims whose reads would end with the reads ahead of them wait: ~100 at a
// time, out of the walk while they wait unless refused before (Controller::hold), each waiting
// claim's first wait costs an exact TTR (its timing error is judged from there). The provider's
// own work (its read pump, fills and evictions, the prefix sums of its queue) is a fifth of it.
// snapshots_per_event counts ttr()'s projections of the whole queue (~700 reads deep here: the
// first waits' and the commits' exact TTRs, one per state of the provider that needs one), the
// largest single cost left (~12 % of the callgrind instructions).
//
//   cmake -G Ninja -B build-ctl-rel -DCMAKE_BUILD_TYPE=Release -DTEMPOKV_WERROR=ON
//   ninja -C build-ctl-rel controller_bench && build-ctl-rel/bench/controller_bench
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "bench_stack.h"
#include "controller/controller.h"

namespace tempokv {
namespace {

using bench::kObj;
using bench::must;
constexpr uint64_t kPool = 4096;  // chunks in the store
constexpr double kRate = 4.0 * static_cast<double>(kGiB);

struct Stack : bench::Stack {
  Stack(Duration spacing_between, bool full_scan, uint64_t planned = 10'000)
      : bench::Stack(bench::StackOptions{kPool, 1024, 512, 16, kRate}),
        spacing(spacing_between),
        claims(planned) {
    ControllerOptions co;
    co.full_scan = full_scan;
    controller = std::make_unique<Controller>(ex, *provider, make_commit_policy("tempokv").value(),
                                              co);
    // A backlog outside the controller: 16 reads in flight and 64 queued (640 ms at 4 GiB/s).
    StagingClaim backlog{1'000'000, {}};
    for (uint64_t i = kPool - 80; i < kPool; ++i) backlog.objects.push_back({Key{1, i}, kObj});
    must(provider->commit(backlog, {}));
    t0 = ex.now();
    for (ClaimId id = 0; id < claims; ++id) report(id, first_ttu(id));
  }
  std::vector<ManifestEntry> manifest(ClaimId id) const {
    // Prefix sharing: claim id starts at a chunk shared with its neighbours.
    uint64_t first = (id * 7) % (kPool - 100), n = 1 + id % 8;
    std::vector<ManifestEntry> m;
    for (uint64_t i = first; i < first + n; ++i) m.push_back({Key{1, i}, kObj});
    return m;
  }
  // The TTU claim id (of the first `claims`) is reported with.
  Duration first_ttu(ClaimId id) const {
    return Duration(std::chrono::milliseconds(500)) + spacing * static_cast<int64_t>(id);
  }
  void report(ClaimId id, Duration ttu) { must(controller->report(id, manifest(id), ttu)); }

  Duration spacing;
  uint64_t claims;  // outstanding claims
  std::unique_ptr<Controller> controller;
  TimePoint t0{};
};

void counters(benchmark::State& state, const Stack& s, const ControllerStats& before) {
  ControllerStats after = s.controller->stats();
  double n = static_cast<double>(state.iterations());
  state.counters["ttr_per_event"] = static_cast<double>(after.ttr_queries - before.ttr_queries) / n;
  state.counters["evals_per_event"] =
      static_cast<double>(after.evaluations - before.evaluations) / n;
  state.counters["planned"] = static_cast<double>(after.reported - after.commits -
                                                  after.ordinary - after.cancelled);
  state.counters["queued_reads"] = static_cast<double>(s.provider->stats().queued_reads);
}

// One reevaluation (what a tick or any event costs) at a fixed virtual time.
void BM_Reevaluate(benchmark::State& state) {
  Stack s(std::chrono::milliseconds(state.range(0)), state.range(1) != 0,
          static_cast<uint64_t>(state.range(2)));
  ControllerStats before = s.controller->stats();
  for (auto _ : state) must(s.controller->update_estimates({}));
  counters(state, s, before);
}
BENCHMARK(BM_Reevaluate)
    ->ArgNames({"spacing_ms", "full_scan", "claims"})
    ->ArgsProduct({{50, 20}, {0}, {1'000, 10'000, 100'000}})
    ->Args({50, 1, 10'000})
    ->Unit(benchmark::kMicrosecond);

// One claim's new TTU (far from the window) and the reevaluation it triggers.
void BM_TtuUpdate(benchmark::State& state) {
  Stack s(std::chrono::milliseconds(state.range(0)), false,
          static_cast<uint64_t>(state.range(1)));
  ControllerStats before = s.controller->stats();
  ClaimId id = s.claims / 2;
  int64_t k = 0;
  for (auto _ : state) {
    std::pair<ClaimId, Duration> one{id, s.first_ttu(id) + Duration(k & 1)};
    must(s.controller->update_estimates({&one, 1}));
    ++k;
  }
  counters(state, s, before);
}
BENCHMARK(BM_TtuUpdate)
    ->ArgNames({"spacing_ms", "claims"})
    ->ArgsProduct({{50, 20, 5}, {1'000, 10'000, 100'000}})
    ->Unit(benchmark::kMicrosecond);

// The running system, one executor event per iteration: read completions (staging completions
// among them), ticks, laxity wake-ups and commits, retrievals at each claim's use time. A released
// claim is replaced by a new one `claims` spacings out, so `claims` stay outstanding.
void BM_SteadyStateEvent(benchmark::State& state) {
  Stack s(std::chrono::milliseconds(state.range(0)), false,
          static_cast<uint64_t>(state.range(1)));
  const int64_t n_claims = static_cast<int64_t>(s.claims);
  ClaimId next_id = s.claims;
  std::function<void(ClaimId)> schedule;
  auto retrieve = [&](ClaimId id) {
    auto done = [&s, &schedule, &next_id, n_claims, id] {
      must(s.controller->begin_transfer(id));
      must(s.controller->end_transfer(id));
      ClaimId fresh = next_id++;
      s.report(fresh, s.spacing * n_claims);
      schedule(fresh);
    };
    auto answer = must(s.controller->request_retrieval(
        id, [done](ClaimId, Result<RetrievalPath> p) {
          if (p.is_ok()) done();
        }));
    if (answer != RetrievalAnswer::kWait) done();
  };
  schedule = [&](ClaimId id) {
    TimePoint use = s.controller->info(id).value().timeline.reported.value() +
                    (id < s.claims ? s.first_ttu(id) : s.spacing * n_claims);
    s.ex.at(use, [&retrieve, id] { retrieve(id); });
  };
  for (ClaimId id = 0; id < s.claims; ++id) schedule(id);
  ControllerStats before = s.controller->stats();
  const uint64_t snapshot_builds = s.provider->ttr_snapshot_builds();
  TimePoint start = s.ex.now();
  for (auto _ : state) {
    if (!s.ex.step()) state.SkipWithError("no events left");
  }
  counters(state, s, before);
  const double n_events = static_cast<double>(state.iterations());
  state.counters["virtual_s"] = to_seconds(s.ex.now() - start);
  state.counters["commits"] = static_cast<double>(s.controller->stats().commits - before.commits);
  state.counters["snapshots_per_event"] =
      static_cast<double>(s.provider->ttr_snapshot_builds() - snapshot_builds) / n_events;
}
// A fixed number of events, so that every run (and two binaries compared) measures the same
// stretch of the run: the dense case is not stationary (its queue and its planned claims move as
// it runs), and an iteration count chosen from the time measured a longer stretch for a faster
// binary.
BENCHMARK(BM_SteadyStateEvent)
    ->ArgNames({"spacing_ms", "claims"})
    ->ArgsProduct({{50, 40, 20}, {1'000, 10'000, 100'000}})
    ->Iterations(100'000)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tempokv
