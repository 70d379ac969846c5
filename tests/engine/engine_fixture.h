// A simulated serving stack for engine tests: SimExecutor, the simulated SSD (no latency, 1 MiB per
// ms, behind a fault-injecting wrapper), a simulated store, a metadata-only fast tier, the
// provider, a controller with the named policy, and one simulated transfer link per engine. The
// test profile makes every step a whole number of nanoseconds, so times are exact:
//   chunk = 256 tokens × 4 KiB = 1 MiB; staging n chunks at once = n ms; retrieval = 1 ms + n ms;
//   prefill = 10 ms + 10 µs per token; decode step = 5 ms + 1 µs per context token + 1 ms per seq.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/units.h"
#include "controller/controller.h"
#include "engine/serving_engine.h"
#include "executor/sim_executor.h"
#include "fasttier/fast_tier.h"
#include "provider/staging_provider.h"
#include "ssd/fault_injecting_engine.h"
#include "ssd/sim_ssd_engine.h"
#include "store/store.h"
#include "transfer/sim_transfer_engine.h"
#include "workload/precompute.h"
#include "workload/tokens.h"

namespace tempokv::testing {

inline constexpr uint64_t kTokenBytes = 4096;
inline constexpr uint64_t kChunkBytes = 256 * kTokenBytes;  // 1 MiB
inline constexpr double kBytesPerS = 1000.0 * kMiB;         // 1 MiB per ms
inline constexpr const char* kModel = "test-model";

inline CostProfile exact_profile() {
  CostProfile p;
  p.name = "exact";
  p.model = kModel;
  p.kv_bytes_per_token = kTokenBytes;
  p.prefill_a_s = 0.010;
  p.prefill_b_s_per_token = 10e-6;
  p.decode_a_s = 0.005;
  p.decode_b_s_per_context_token = 1e-6;
  p.decode_c_s_per_seq = 0.001;
  p.retrieval_latency_s = 0.001;
  p.retrieval_bytes_per_s = kBytesPerS;
  return p;
}

// A request of `doc` document tokens (seeded) plus `question` tokens, with the first
// `cached_chunks` chunks precomputed.
inline Request make_request(uint64_t id, uint64_t doc_seed, uint32_t doc, uint32_t question,
                            uint32_t cached_chunks, uint32_t output, Duration arrival = {}) {
  std::vector<uint32_t> tokens;
  append_synthetic_tokens(doc_seed, doc, tokens);
  Request r;
  r.id = id;
  r.arrival = arrival;
  r.model = kModel;
  r.prompt_tokens = doc + question;
  r.suffix_tokens = question;
  r.chunks = chunk_prefix(kModel, tokens, 256, kTokenBytes);
  r.precomputed_chunks = cached_chunks;
  r.output_tokens = output;
  r.max_output_tokens = 128;
  return r;
}

// The devices and limits of a stack; the defaults are the exact test numbers above.
struct StackConfig {
  std::string policy = "demand";
  double ssd_bytes_per_s = kBytesPerS;  // reads and writes
  Duration ssd_latency{};
  uint32_t concurrency = 16;  // SSD service slots and provider reads in flight
  uint64_t budget_bytes = 64 * kChunkBytes;
  uint64_t capacity_bytes = 128 * kChunkBytes;
  uint64_t slot_bytes = kChunkBytes;
};

// The paper's testbed (DESIGN.md §6): SSD -> fast tier 11 GiB/s, 100 GiB tier, 50 GiB budget.
inline StackConfig paper_config(const char* policy, uint64_t chunk_bytes) {
  StackConfig c;
  c.policy = policy;
  c.ssd_bytes_per_s = 11.0 * double(kGiB);
  c.ssd_latency = std::chrono::microseconds(80);
  // Whole slots of one chunk each (a 192 KiB/token chunk does not divide 100 GiB).
  c.budget_bytes = 50 * kGiB / chunk_bytes * chunk_bytes;
  c.capacity_bytes = 100 * kGiB / chunk_bytes * chunk_bytes;
  c.slot_bytes = chunk_bytes;
  return c;
}

class EngineStack {
 public:
  explicit EngineStack(const char* policy = "demand") : EngineStack(with_policy(policy)) {}
  explicit EngineStack(const StackConfig& c) {
    SsdEngineOptions eo;
    eo.kind = SsdEngineKind::kSimulated;
    eo.sim_latency = c.ssd_latency;
    eo.sim_read_bytes_per_s = c.ssd_bytes_per_s;
    eo.sim_write_bytes_per_s = c.ssd_bytes_per_s;
    eo.sim_max_concurrency = c.concurrency;
    faults = std::make_unique<FaultInjectingEngine>(ex, std::make_unique<SimSsdEngine>(ex, eo), 1);
    StoreOptions so;
    so.simulated = true;
    so.segment_bytes = 64 * c.slot_bytes;
    so.capacity_bytes = 1ULL << 44;
    so.max_object_bytes = 4 * c.slot_bytes;
    store = Store::open(ex, *faults, so).value();
    FastTierOptions to;
    to.capacity_bytes = c.capacity_bytes;
    to.protected_budget_bytes = c.budget_bytes;
    to.slot_bytes = c.slot_bytes;
    to.backing = BackingKind::kMetadata;
    tier = FastTier::create(to).value();
    ProviderOptions po;
    po.max_reads_in_flight = c.concurrency;
    po.prior_read_bytes_per_s = c.ssd_bytes_per_s;
    po.static_read_bytes_per_s = c.ssd_bytes_per_s;
    provider = StagingProvider::create(ex, *store, *tier, po).value();
    controller = std::make_unique<Controller>(ex, *provider, make_commit_policy(c.policy).value());
    writer = std::make_unique<KvWriter>(*store, false);
  }
  static StackConfig with_policy(const char* policy) {
    StackConfig c;
    c.policy = policy;
    return c;
  }

  // Puts the precomputed chunks, then returns the time the run starts at.
  TimePoint precompute(const std::vector<Request>& requests) {
    bool ok = false;
    precompute_kv(*store, requests, {}, [&](Result<PrecomputeStats> r) {
      EXPECT_TRUE(r.is_ok()) << r.status().to_string();
      ok = r.is_ok();
    });
    ex.run();
    EXPECT_TRUE(ok);
    return ex.now();
  }

  ServingEngine& add_engine(EngineOptions o = {}, CostProfile profile = exact_profile()) {
    links.push_back(std::make_unique<SimTransferEngine>(ex, sim_transfer_options(profile)));
    EngineContext c{&ex,
                    store.get(),
                    provider.get(),
                    o.baseline ? nullptr : controller.get(),
                    links.back().get(),
                    writer.get()};
    auto e = ServingEngine::create(c, profile, o);
    EXPECT_TRUE(e.is_ok()) << e.status().to_string();
    engines.push_back(std::move(e).value());
    return *engines.back();
  }

  SimExecutor ex;
  std::unique_ptr<FaultInjectingEngine> faults;
  std::unique_ptr<Store> store;
  std::unique_ptr<FastTier> tier;
  std::unique_ptr<StagingProvider> provider;
  std::unique_ptr<Controller> controller;
  std::vector<std::unique_ptr<SimTransferEngine>> links;
  std::unique_ptr<KvWriter> writer;
  std::vector<std::unique_ptr<ServingEngine>> engines;
};

inline EngineOptions exact_options(uint32_t max_active = 4) {
  EngineOptions o;
  o.max_active = max_active;
  o.jitter_sigma = 0;
  return o;
}

}  // namespace tempokv::testing
