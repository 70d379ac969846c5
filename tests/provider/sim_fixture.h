// A simulated staging stack for provider tests: SimExecutor, the simulated SSD engine (zero
// latency, 1 GiB/s, processor sharing) behind a fault-injecting wrapper, a simulated store holding
// objects of kObj bytes, a metadata-only fast tier and the provider. With these numbers one object
// alone takes exactly 62.5 ms and the provider's projection is exact.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "common/units.h"
#include "executor/sim_executor.h"
#include "fasttier/fast_tier.h"
#include "provider/staging_provider.h"
#include "ssd/fault_injecting_engine.h"
#include "ssd/sim_ssd_engine.h"
#include "store/store.h"

namespace tempokv::testing {

inline constexpr uint64_t kObj = 64 * kMiB;
inline constexpr double kRate = static_cast<double>(kGiB);               // bytes per second
inline constexpr Duration kObjTime = std::chrono::microseconds(62'500);  // kObj at kRate, alone

inline Key obj(uint64_t i) { return Key{7, i}; }
// With SimStackOptions::small_every = k, every k-th object is a final chunk of a third the size.
inline uint64_t obj_bytes(uint64_t i, uint64_t small_every) {
  return small_every != 0 && i % small_every == 0 ? kObj / 3 : kObj;
}

inline StagingClaim claim_of(ClaimId id, std::vector<uint64_t> objects, uint64_t bytes = kObj) {
  StagingClaim c;
  c.id = id;
  for (uint64_t i : objects) c.objects.push_back({obj(i), bytes});
  return c;
}

struct SimStackOptions {
  uint64_t capacity_objects = 16;
  uint64_t budget_objects = 8;
  uint32_t max_reads_in_flight = 2;
  uint64_t stored_objects = 64;  // obj(1) .. obj(n) in the store
  Duration latency{};
  double calibration_weight = 0.25;
  uint64_t small_every = 0;  // every k-th stored object is a small final chunk (0: none)
  double write_bytes_per_s = 64 * kRate;  // the simulated SSD's write rate
  // ProviderOptions::write_cost; unset: the device's own ratio, kRate / write_bytes_per_s.
  std::optional<double> write_cost;
  // Both of StoreOptions' limits of write bytes at the engine, reading or not (the store holds
  // back writes beyond them: reads first); unset: the store's defaults.
  std::optional<uint64_t> store_write_bytes_in_flight;
  IssueOrder issue_order = IssueOrder::kUse;  // ProviderOptions::issue_order
};

class SimStack {
 public:
  explicit SimStack(const SimStackOptions& o = {}) {
    SsdEngineOptions eo;
    eo.kind = SsdEngineKind::kSimulated;
    eo.sim_latency = o.latency;
    eo.sim_read_bytes_per_s = kRate;
    eo.sim_write_bytes_per_s = o.write_bytes_per_s;
    eo.sim_max_concurrency = 64;
    auto sim = std::make_unique<SimSsdEngine>(ex, eo);
    sim_ = sim.get();
    faults = std::make_unique<FaultInjectingEngine>(ex, std::move(sim), 1);
    StoreOptions so;
    so.simulated = true;
    so.segment_bytes = 16 * kObj;
    so.capacity_bytes = 1024 * kObj;
    so.max_object_bytes = 2 * kObj;
    if (o.store_write_bytes_in_flight) {
      so.write_bytes_in_flight = *o.store_write_bytes_in_flight;
      so.write_bytes_in_flight_while_reading = *o.store_write_bytes_in_flight;
    }
    auto s = Store::open(ex, *faults, so);
    EXPECT_TRUE(s.is_ok()) << s.status().to_string();
    store = std::move(s).value();
    for (uint64_t i = 1; i <= o.stored_objects; ++i) {
      store->put(obj(i), {0, 256}, nullptr, obj_bytes(i, o.small_every),
                 [](Status st) { EXPECT_TRUE(st.is_ok()); });
    }
    ex.run();
    FastTierOptions to;
    to.capacity_bytes = o.capacity_objects * kObj;
    to.protected_budget_bytes = o.budget_objects * kObj;
    to.slot_bytes = kObj;
    to.backing = BackingKind::kMetadata;
    auto t = FastTier::create(to);
    EXPECT_TRUE(t.is_ok()) << t.status().to_string();
    tier = std::move(t).value();
    ProviderOptions po;
    po.max_reads_in_flight = o.max_reads_in_flight;
    po.prior_read_bytes_per_s = kRate;
    po.static_read_bytes_per_s = kRate;
    po.calibration_weight = o.calibration_weight;
    po.write_cost = o.write_cost.value_or(kRate / o.write_bytes_per_s);
    po.issue_order = o.issue_order;
    auto p = StagingProvider::create(ex, *store, *tier, po);
    EXPECT_TRUE(p.is_ok()) << p.status().to_string();
    provider = std::move(p).value();
    t0 = ex.now();
  }

  // Commits and records the readiness callback's time and status in ready[id].
  Result<CommitState> commit(const StagingClaim& c) {
    return provider->commit(c, [this](ClaimId id, Status st) {
      ready[id] = {ex.now(), std::move(st)};
    });
  }
  Result<ClaimPhase> ordinary(const StagingClaim& c) {
    return provider->start_ordinary(c, [this](ClaimId id, Status st) {
      ready[id] = {ex.now(), std::move(st)};
    });
  }
  // Time since the stack was built (after the store was filled).
  Duration since_t0() const { return ex.now() - t0; }
  Duration ready_after(ClaimId id) const { return ready.at(id).first - t0; }
  uint64_t engine_reads() const { return sim_->stats().reads; }

  SimExecutor ex;
  std::unique_ptr<FaultInjectingEngine> faults;
  std::unique_ptr<Store> store;
  std::unique_ptr<FastTier> tier;
  std::unique_ptr<StagingProvider> provider;
  TimePoint t0{};
  std::map<ClaimId, std::pair<TimePoint, Status>> ready;

 private:
  SimSsdEngine* sim_ = nullptr;
};

}  // namespace tempokv::testing
