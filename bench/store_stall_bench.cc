// The control loop's worst stall while large puts stream into the store: a 1 ms probe timer on the
// store's RealExecutor records how late it fires, while 256 MiB of 32 MiB puts (2 in flight,
// 4 KiB-aligned: the zero-copy path) go into a real store with a capacity of two segments: with
// 64 MiB segments the run also creates segments and reclaims them, with 512 MiB ones it does not.
// worst_stall_ms is the probe's worst lateness (on a busy machine it includes being scheduled
// out); worst_loop_cpu_ms the most CPU the loop thread itself used between two probes;
// worst_stall_less_runq_ms the worst lateness less the time the loop thread waited on a run queue
// meanwhile (/proc/thread-self/schedstat): what is left is the loop blocked (a syscall such as
// fallocate or fsync) or busy, not the scheduler's doing. Everything the store does on the
// loop thread (payload checksums, segment creation, unlinks) shows up as probe lateness. Since
// segment creation moved to the store's creator thread, a put that finds no room waits for the
// next segment instead of the loop.
//
//   build/debug/bench/store_stall_bench [--benchmark_repetitions=3]
//   TEMPOKV_BENCH_DIR (default /var/tmp) holds the store.
#include <benchmark/benchmark.h>

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_must.h"
#include "common/aligned_buffer.h"
#include "common/units.h"
#include "executor/real_executor.h"
#include "ssd/ssd_engine.h"
#include "store/store.h"

namespace tempokv {
namespace {

constexpr uint64_t kObjectBytes = 32 * kMiB;
constexpr uint64_t kStreamBytes = 256 * kMiB;

// CPU time of the calling thread: what the loop itself spent, whatever the scheduler did.
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Time the calling thread has waited on a run queue (runnable, not running): the scheduler's
// share of a probe's lateness on a busy machine. 0 where schedstat is missing.
double thread_run_delay_s() {
  std::FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  if (f == nullptr) return 0;
  unsigned long long run_ns = 0, wait_ns = 0;
  int n = std::fscanf(f, "%llu %llu", &run_ns, &wait_ns);
  std::fclose(f);
  return n == 2 ? double(wait_ns) * 1e-9 : 0;
}

using bench::must;

// state.range(0): segment MiB (64: the run rolls segments and reclaims; 512: no roll, so only the
// per-put work shows).
void BM_LoopStallWhilePutting256MiB(benchmark::State& state) {
  const char* parent = std::getenv("TEMPOKV_BENCH_DIR");
  std::string dir = std::string(parent ? parent : "/var/tmp") + "/tempokv-stall-bench";
  std::vector<AlignedBuffer> bufs;
  for (int i = 0; i < 2; ++i) {
    bufs.push_back(must(AlignedBuffer::allocate(kObjectBytes)));
    std::memset(bufs.back().data(), 0x5a + i, kObjectBytes);
  }
  std::vector<double> worst_ms, worst_cpu_ms, worst_unqueued_ms;
  for (auto _ : state) {
    std::filesystem::remove_all(dir);
    RealExecutor ex;
    auto engine = must(make_ssd_engine(ex, SsdEngineOptions{}));
    StoreOptions o;
    o.dir = dir;
    o.segment_bytes = uint64_t(state.range(0)) * kMiB;
    o.capacity_bytes = 2 * o.segment_bytes;
    o.max_object_bytes = kObjectBytes;
    auto store = must(Store::open(ex, *engine, o));
    // The first segment is created before the probe starts (one small put).
    std::optional<Status> first;
    store->put(Key{0x57a11, ~0ULL}, {0, 1}, bufs[0].data(), kBlockBytes,
               [&](Status st) { first = st; });
    ex.run_until([&] { return first.has_value(); });
    Duration worst{};
    double worst_cpu_s = 0;       // the loop thread's own CPU between two probes
    double worst_unqueued_s = 0;  // lateness less the run-queue wait: blocked or busy on the loop
    TimePoint due = ex.now() + std::chrono::milliseconds(1);
    double cpu_at = thread_cpu_s();
    double delay_at = thread_run_delay_s();
    bool done = false;
    std::function<void()> probe = [&] {
      Duration late = ex.now() - due;
      worst = std::max(worst, late);
      double cpu = thread_cpu_s();
      worst_cpu_s = std::max(worst_cpu_s, cpu - cpu_at);
      cpu_at = cpu;
      double delay = thread_run_delay_s();
      worst_unqueued_s = std::max(worst_unqueued_s, to_seconds(late) - (delay - delay_at));
      delay_at = delay;
      due = ex.now() + std::chrono::milliseconds(1);
      if (!done) ex.after(std::chrono::milliseconds(1), probe);
    };
    ex.after(std::chrono::milliseconds(1), probe);
    uint64_t issued = 0, completed = 0;
    std::function<void(int)> issue = [&](int slot) {
      if (issued * kObjectBytes >= kStreamBytes) return;
      uint64_t i = issued++;
      store->put(Key{0x57a11, i}, {0, 256}, bufs[slot].data(), kObjectBytes, [&, slot](Status st) {
        if (!st.is_ok()) {
          std::fprintf(stderr, "store_stall_bench: %s\n", st.to_string().c_str());
          std::exit(1);
        }
        ++completed;
        issue(slot);
      });
    };
    issue(0);
    issue(1);
    ex.run_until([&] { return completed * kObjectBytes >= kStreamBytes; });
    done = true;
    std::optional<Status> closed;
    store->close([&](Status st) { closed = st; });
    ex.run_until([&] { return closed.has_value(); });
    worst_ms.push_back(to_seconds(worst) * 1e3);
    worst_cpu_ms.push_back(worst_cpu_s * 1e3);
    worst_unqueued_ms.push_back(worst_unqueued_s * 1e3);
  }
  std::filesystem::remove_all(dir);
  state.counters["worst_stall_ms"] = *std::max_element(worst_ms.begin(), worst_ms.end());
  state.counters["worst_loop_cpu_ms"] = *std::max_element(worst_cpu_ms.begin(), worst_cpu_ms.end());
  state.counters["worst_stall_less_runq_ms"] =
      *std::max_element(worst_unqueued_ms.begin(), worst_unqueued_ms.end());
  state.counters["stream_MiB"] = double(kStreamBytes / kMiB);
}
BENCHMARK(BM_LoopStallWhilePutting256MiB)
    ->Arg(64)
    ->Arg(512)
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tempokv
