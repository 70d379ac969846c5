// The payload checksum (common/checksum.h, AVX2 where the CPU has it) against the system
// libxxhash's XXH3-128 in the same process: 1 MiB that stays in cache, and 256 MiB cycled so each
// hash reads from DRAM (as a get's verification of a freshly read object largely does).
#include <benchmark/benchmark.h>
#include <xxhash.h>

#include <cstring>
#include <memory>

#include "common/checksum.h"

namespace {

constexpr size_t kCold = 256 << 20;

template <bool kOurs>
void BM_Xxh3(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t span = state.range(1) ? kCold : bytes;
  std::unique_ptr<unsigned char[]> data(new unsigned char[span]);
  std::memset(data.get(), 0x5a, span);
  size_t at = 0;
  for (auto _ : state) {
    const unsigned char* p = data.get() + at;
    if constexpr (kOurs) {
      benchmark::DoNotOptimize(tempokv::xxh3_128(p, bytes));
    } else {
      benchmark::DoNotOptimize(XXH3_128bits(p, bytes));
    }
    at = (at + bytes) % span;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.SetLabel(kOurs ? std::string(tempokv::xxh3_variant()) : "libxxhash");
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"bytes", "dram"})->Args({1 << 20, 0})->Args({32 << 20, 1});
}

BENCHMARK(BM_Xxh3<false>)->Name("BM_Xxh3/library")->Apply(Args);
BENCHMARK(BM_Xxh3<true>)->Name("BM_Xxh3/ours")->Apply(Args);

}  // namespace
