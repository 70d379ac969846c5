// The simulated staging stack the micro-benchmarks share: SimExecutor, the simulated SSD engine,
// a simulated store holding `objects` 32 MiB chunks (Key{1, i}), a metadata-only fast tier and the
// staging provider. Setup aborts with a message on any error; benchmarks measure, never assert.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "bench_must.h"
#include "common/units.h"
#include "controller/controller.h"
#include "executor/sim_executor.h"
#include "fasttier/fast_tier.h"
#include "provider/staging_provider.h"
#include "ssd/sim_ssd_engine.h"
#include "store/store.h"

namespace tempokv::bench {

inline constexpr uint64_t kObj = 32 * kMiB;  // a 256-token chunk of Llama-3.1-8B

struct StackOptions {
  uint64_t objects = 1024;         // chunks in the store
  uint64_t tier_objects = 2048;    // fast-tier capacity, in chunks
  uint64_t budget_objects = 1025;  // protected budget, in chunks
  uint32_t max_reads_in_flight = 16;
  double read_bytes_per_s = 11.0 * double(kGiB);  // SSD engine rate and the provider's prior
};

struct Stack {
  explicit Stack(const StackOptions& o) {
    SsdEngineOptions eo;
    eo.kind = SsdEngineKind::kSimulated;
    eo.sim_latency = Duration::zero();
    eo.sim_read_bytes_per_s = o.read_bytes_per_s;
    eo.sim_write_bytes_per_s = 1e15;  // filling the store is not what is measured
    engine = std::make_unique<SimSsdEngine>(ex, eo);
    StoreOptions so;
    so.simulated = true;
    so.segment_bytes = 64 * kObj;
    so.capacity_bytes = (o.objects + 128) * kObj;
    so.max_object_bytes = kObj;
    store = must(Store::open(ex, *engine, so));
    for (uint64_t i = 0; i < o.objects; ++i) {
      store->put(Key{1, i}, {0, 256}, nullptr, kObj, [](Status) {});
    }
    ex.run();
    FastTierOptions to;
    to.capacity_bytes = o.tier_objects * kObj;
    to.protected_budget_bytes = o.budget_objects * kObj;
    to.slot_bytes = kObj;
    to.backing = BackingKind::kMetadata;
    tier = must(FastTier::create(to));
    ProviderOptions po;
    po.max_reads_in_flight = o.max_reads_in_flight;
    po.prior_read_bytes_per_s = o.read_bytes_per_s;
    po.issue_order = issue_order_of("tempokv");  // the benches run TempoKV's policy
    provider = must(StagingProvider::create(ex, *store, *tier, po));
  }
  // A claim of chunks first .. first + n - 1.
  static StagingClaim claim(ClaimId id, uint64_t first, uint64_t n) {
    StagingClaim c{id, {}};
    for (uint64_t i = first; i < first + n; ++i) c.objects.push_back({Key{1, i}, kObj});
    return c;
  }

  SimExecutor ex;
  std::unique_ptr<SimSsdEngine> engine;
  std::unique_ptr<Store> store;
  std::unique_ptr<FastTier> tier;
  std::unique_ptr<StagingProvider> provider;
};

}  // namespace tempokv::bench
