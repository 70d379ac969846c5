// Reads before writes on a real SSD: how long a restore of 8 × 32 MiB (4 gets in flight, as the
// staging provider reads) takes alone and when it starts together with a burst of 16 × 32 MiB puts
// issued at once (a prefill's KV being saved), with the store's write bound (range 0: the defaults,
// 64 MiB of writes at the SSD and one record while reading) and without it (range 1: every put
// goes to the SSD at once). Counters are medians over the iterations; behind_burst_x is the
// restore behind the burst over the restore alone, in the same iteration.
//
//   build/release/bench/store_read_priority_bench [--benchmark_repetitions=3]
//   TEMPOKV_BENCH_DIR (default /var/tmp) holds the store.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench_must.h"
#include "common/aligned_buffer.h"
#include "common/percentile.h"
#include "common/units.h"
#include "executor/real_executor.h"
#include "ssd/ssd_engine.h"
#include "store/store.h"

namespace tempokv {
namespace {

constexpr uint64_t kObjectBytes = 32 * kMiB;
constexpr uint64_t kRestoreObjects = 8;
constexpr uint64_t kBurstObjects = 16;
constexpr int kGetsInFlight = 4;

using bench::must;

class Run {
 public:
  Run(const std::string& dir, bool bounded, const AlignedBuffer& payload,
      std::vector<AlignedBuffer>& read_bufs)
      : payload_(payload), read_bufs_(read_bufs) {
    engine_ = must(make_ssd_engine(ex_, SsdEngineOptions{}));
    StoreOptions o;
    o.dir = dir;
    o.capacity_bytes = 64ULL << 30;
    o.max_object_bytes = kObjectBytes;
    if (!bounded) {
      o.write_bytes_in_flight = 64ULL << 30;
      o.write_bytes_in_flight_while_reading = 64ULL << 30;
    }
    store_ = must(Store::open(ex_, *engine_, o));
  }
  ~Run() {
    std::optional<Status> closed;
    store_->close([&](Status st) { closed = st; });
    ex_.run_until([&] { return closed.has_value(); });
  }

  // Puts keys [first, first + n) at once; returns when all are durable.
  void put_all(uint64_t first, uint64_t n, TimePoint* done_at = nullptr) {
    start_puts(first, n, done_at);
    ex_.run_until([&] { return puts_left_ == 0; });
  }
  void start_puts(uint64_t first, uint64_t n, TimePoint* done_at) {
    puts_left_ += n;
    for (uint64_t i = first; i < first + n; ++i) {
      store_->put(Key{0xbead, i}, {0, 256}, payload_.data(), kObjectBytes,
                  [this, done_at](Status st) {
                    must(st);
                    if (--puts_left_ == 0 && done_at != nullptr) *done_at = ex_.now();
                  });
    }
  }
  // Gets keys [0, kRestoreObjects), kGetsInFlight at a time; sets *done_at when the last ends.
  void start_restore(TimePoint* done_at) {
    next_get_ = 0;
    gets_left_ = kRestoreObjects;
    for (int slot = 0; slot < kGetsInFlight; ++slot) get_next(slot, done_at);
  }
  void run_until_idle() {
    ex_.run_until([&] { return puts_left_ == 0 && gets_left_ == 0; });
  }
  TimePoint now() const { return ex_.now(); }

 private:
  void get_next(int slot, TimePoint* done_at) {
    if (next_get_ >= kRestoreObjects) return;
    const uint64_t i = next_get_++;
    store_->get(Key{0xbead, i}, read_bufs_[slot].data(), kObjectBytes,
                [this, slot, done_at](Result<size_t> r) {
                  must(r.status());
                  if (--gets_left_ == 0) *done_at = ex_.now();
                  get_next(slot, done_at);
                });
  }

  RealExecutor ex_;
  std::unique_ptr<SsdEngine> engine_;
  std::unique_ptr<Store> store_;
  const AlignedBuffer& payload_;
  std::vector<AlignedBuffer>& read_bufs_;
  uint64_t puts_left_ = 0;
  uint64_t gets_left_ = 0;
  uint64_t next_get_ = 0;
};

void BM_RestoreBehindABurstOfPuts(benchmark::State& state) {
  const bool bounded = state.range(0) == 0;
  const char* parent = std::getenv("TEMPOKV_BENCH_DIR");
  const std::string dir = std::string(parent ? parent : "/var/tmp") + "/tempokv-priority-bench";
  AlignedBuffer payload = must(AlignedBuffer::allocate(kObjectBytes));
  std::memset(payload.data(), 0x5a, kObjectBytes);
  std::vector<AlignedBuffer> read_bufs;
  for (int i = 0; i < kGetsInFlight; ++i)
    read_bufs.push_back(must(AlignedBuffer::allocate(kObjectBytes)));
  std::vector<double> alone_ms, behind_ms, ratio, burst_ms;
  for (auto _ : state) {
    std::filesystem::remove_all(dir);
    {
      Run run(dir, bounded, payload, read_bufs);
      run.put_all(0, kRestoreObjects);
      TimePoint t0 = run.now(), restored{};
      run.start_restore(&restored);
      run.run_until_idle();
      const double alone = to_seconds(restored - t0) * 1e3;
      TimePoint t1 = run.now(), burst_done{};
      run.start_puts(1000, kBurstObjects, &burst_done);
      run.start_restore(&restored);
      run.run_until_idle();
      const double behind = to_seconds(restored - t1) * 1e3;
      alone_ms.push_back(alone);
      behind_ms.push_back(behind);
      ratio.push_back(behind / alone);
      burst_ms.push_back(to_seconds(burst_done - t1) * 1e3);
    }
    std::filesystem::remove_all(dir);
  }
  state.counters["restore_alone_ms"] = median(alone_ms);
  state.counters["restore_behind_burst_ms"] = median(behind_ms);
  state.counters["behind_burst_x"] = median(ratio);
  state.counters["burst_ms"] = median(burst_ms);
}
BENCHMARK(BM_RestoreBehindABurstOfPuts)
    ->ArgName("unbounded")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tempokv
