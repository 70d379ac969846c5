// Staging-provider micro-benchmarks (simulated mode, metadata-only fast tier, no I/O in the timed
// loops): the cost of ttr() with a deep read queue, and of commit + release / cancel.
//
//   build-prov-rel/bench/provider_bench
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "bench_stack.h"

namespace tempokv {
namespace {

using bench::kObj;
using bench::must;

// A simulated stack whose store holds `objects` chunks, with room and budget for all of them.
struct Stack : bench::Stack {
  explicit Stack(uint64_t objects, uint32_t max_reads = 16)
      : bench::Stack(bench::StackOptions{objects, 2 * objects, objects + 1, max_reads,
                                         11.0 * double(kGiB)}) {}
};

// ttr() of a claim of 8 new objects behind 1,000 reads (16 in flight, 984 queued).
void BM_TtrBehind1000Reads(benchmark::State& state) {
  Stack s(1100);
  for (ClaimId id = 0; id < 250; ++id) must(s.provider->commit(Stack::claim(id, id * 4, 4), {}));
  StagingClaim probe = Stack::claim(1000, 1000, 8);
  for (auto _ : state) benchmark::DoNotOptimize(s.provider->ttr(probe));
  state.counters["queued"] = static_cast<double>(s.provider->stats().queued_reads);
  state.counters["ttr_ms"] = to_seconds(s.provider->ttr(probe)) * 1e3;
}
BENCHMARK(BM_TtrBehind1000Reads);

// ttr() of a claim fully covered by reads early in the same queue (stops early).
void BM_TtrCoveredEarlyIn1000Reads(benchmark::State& state) {
  Stack s(1100);
  for (ClaimId id = 0; id < 250; ++id) must(s.provider->commit(Stack::claim(id, id * 4, 4), {}));
  StagingClaim probe = Stack::claim(1000, 20, 8);
  for (auto _ : state) benchmark::DoNotOptimize(s.provider->ttr(probe));
}
BENCHMARK(BM_TtrCoveredEarlyIn1000Reads);

// TempoKV-Static's estimate for the same claim.
void BM_StaticTtr(benchmark::State& state) {
  Stack s(64);
  StagingClaim probe = Stack::claim(1000, 0, 8);
  for (auto _ : state) benchmark::DoNotOptimize(s.provider->static_ttr(probe));
}
BENCHMARK(BM_StaticTtr);

// commit + release of a claim of n resident objects (stage-ready at once: protect, unprotect).
void BM_CommitReleaseResident(benchmark::State& state) {
  uint64_t n = static_cast<uint64_t>(state.range(0));
  Stack s(n);
  must(s.provider->commit(Stack::claim(0, 0, n), {}));
  s.ex.run();
  (void)s.provider->release(0);
  ClaimId id = 1;
  for (auto _ : state) {
    must(s.provider->commit(Stack::claim(id, 0, n), {}));
    (void)s.provider->release(id++);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CommitReleaseResident)->Arg(8)->Arg(64);

// commit + cancel of a claim of n objects that must be read (reserve and queue, then dequeue);
// the reads already in flight keep the device busy so none of the claim's reads is issued.
void BM_CommitCancelQueued(benchmark::State& state) {
  uint64_t n = static_cast<uint64_t>(state.range(0));
  Stack s(n + 16);
  must(s.provider->commit(Stack::claim(0, n, 16), {}));  // fills the 16 read slots
  ClaimId id = 1;
  for (auto _ : state) {
    must(s.provider->commit(Stack::claim(id, 0, n), {}));
    (void)s.provider->cancel(id++);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CommitCancelQueued)->Arg(8)->Arg(64);

}  // namespace
}  // namespace tempokv
