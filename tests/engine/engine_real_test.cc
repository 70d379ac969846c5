// Real mode: a store on real files (thread-pool engine, O_DIRECT), an anonymous-memory fast tier,
// the emulated transfer engine copying into host memory that stands in for the device, wall-clock
// time. Every restored chunk is checked against the store's checksum.
#include <gtest/gtest.h>

#include "controller/controller.h"
#include "engine/serving_engine.h"
#include "store/store_test_util.h"
#include "engine/real_workload.h"
#include "workload/precompute.h"

namespace tempokv::testing {
namespace {

class EngineReal : public ::testing::TestWithParam<bool> {};  // baseline?

TEST_P(EngineReal, RestoresVerifiedBytesForEveryHit) {
  TempDir dir;
  if (!dir.supports_direct()) GTEST_SKIP() << dir.path() << " refuses O_DIRECT";
  auto profile = CostProfile::load(std::string(TEMPOKV_PROFILES_DIR) + "/cpu-small.json");
  ASSERT_TRUE(profile.is_ok()) << profile.status().to_string();
  const uint64_t chunk = 256 * profile->kv_bytes_per_token;  // 1 MiB

  StoreHarness h;
  StoreOptions so;
  so.dir = dir.path();
  so.segment_bytes = 64 * chunk;
  so.capacity_bytes = 1024 * chunk;
  so.max_object_bytes = 2 * chunk;
  ASSERT_TRUE(h.start(so, SsdEngineKind::kThreadPool).is_ok());

  auto reqs = small_real_workload(*profile);
  std::optional<Result<PrecomputeStats>> pre;
  precompute_kv(*h.store, reqs, {.write_bytes = true},
                [&](Result<PrecomputeStats> r) { pre = std::move(r); });
  ASSERT_TRUE(run_until(h.ex, [&] { return pre.has_value(); }));
  ASSERT_TRUE(pre->is_ok()) << pre->status().to_string();

  FastTierOptions to;
  to.capacity_bytes = 64 * chunk;
  to.protected_budget_bytes = 32 * chunk;
  to.slot_bytes = chunk;
  auto tier = FastTier::create(to).value();
  ProviderOptions po;
  po.max_reads_in_flight = 4;
  auto provider = StagingProvider::create(h.ex, *h.store, *tier, po).value();
  auto controller =
      std::make_unique<Controller>(h.ex, *provider, make_commit_policy("tempokv").value());
  TransferEngineOptions xo;
  xo.kind = TransferEngineKind::kEmulated;
  xo.pin_with_mlock = false;
  auto transfer = make_transfer_engine(h.ex, xo).value();
  EngineOptions eo;
  eo.baseline = GetParam();
  eo.verify_bytes = true;
  EngineContext c{&h.ex, h.store.get(), provider.get(), controller.get(), transfer.get(), nullptr};
  auto engine = ServingEngine::create(c, *profile, eo).value();
  ASSERT_TRUE(engine->submit(reqs, h.ex.now()).is_ok());
  ASSERT_TRUE(run_until(h.ex, [&] { return engine->done(); }));

  uint64_t hit_chunks = 0;
  for (const RequestRecord& r : engine->records()) {
    EXPECT_TRUE(r.path == RequestPath::kStaged || r.path == RequestPath::kOrdinary)
        << r.id << " " << r.failure;
    EXPECT_GT(r.hit_chunks, 0u);
    EXPECT_EQ(r.verified_chunks, r.hit_chunks);
    hit_chunks += r.hit_chunks;
  }
  EXPECT_EQ(engine->stats().verified_chunks, hit_chunks);
  EXPECT_EQ(engine->stats().mismatched_chunks, 0u);
  EXPECT_EQ(engine->stats().recomputes, 0u);
  EXPECT_TRUE(provider->check_invariants().is_ok());
  engine.reset();
  controller.reset();
  provider.reset();
  ASSERT_TRUE(h.close().is_ok());
}

INSTANTIATE_TEST_SUITE_P(Modes, EngineReal, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "Baseline" : "Claims"; });

}  // namespace
}  // namespace tempokv::testing
