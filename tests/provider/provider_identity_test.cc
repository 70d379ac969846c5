// A key that comes back: the provider serves a fast-tier copy only to claims that validated its
// store generation. A copy left from before a reclamation and a re-put is never served as the new
// object (the stale bytes, or a short copy of a larger one); a copy another claim still protects
// refuses the new claim (FailedPrecondition: the runtime recomputes); a re-put that lands while a
// claim's read is queued fails that claim instead of handing it other bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "executor/real_executor.h"
#include "fasttier/fast_tier.h"
#include "provider/staging_provider.h"
#include "sim_fixture.h"
#include "store/store_test_util.h"

namespace tempokv::testing {
namespace {

constexpr uint64_t kBytes = 300 * kKiB;

class ProviderIdentity : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!dir_.supports_direct()) GTEST_SKIP() << dir_.path() << " refuses O_DIRECT";
    StoreOptions so = small_options(dir_.path());
    so.capacity_bytes = 3 * kMiB;  // three segments of three 300 KiB records
    ASSERT_TRUE(h_.start(so).is_ok());
    FastTierOptions to;
    to.capacity_bytes = 8 * kMiB;
    to.protected_budget_bytes = 4 * kMiB;
    to.slot_bytes = 1 * kMiB;
    to.backing = BackingKind::kAnonymous;
    auto tier = FastTier::create(to);
    ASSERT_TRUE(tier.is_ok()) << tier.status().to_string();
    tier_ = std::move(tier).value();
    auto p = StagingProvider::create(h_.ex, *h_.store, *tier_, ProviderOptions{});
    ASSERT_TRUE(p.is_ok());
    provider_ = std::move(p).value();
  }
  void TearDown() override { provider_.reset(); }

  Status put(uint64_t key, uint64_t seed, size_t bytes = kBytes) {
    auto p = payload(seed, bytes);
    return h_.put(test_key(key), p.data(), p.size());
  }
  // Commits a claim on key and waits until it is ready (or failed); returns the outcome.
  Status stage(ClaimId id, uint64_t key, size_t bytes = kBytes) {
    StagingClaim c{id, {{test_key(key), bytes}}};
    std::optional<Status> done;
    Result<CommitState> r = provider_->commit(c, [&](ClaimId, Status st) { done = st; });
    if (!r.is_ok()) return r.status();
    if (*r == CommitState::kStageReady) return Status::ok();
    if (!run_until(h_.ex, [&] { return done.has_value(); })) return Status::internal("hung");
    return *done;
  }
  bool tier_holds(uint64_t key, uint64_t seed, size_t bytes = kBytes) {
    const FastObject* o = tier_->find(test_key(key));
    if (o == nullptr || o->residency != Residency::kResident || o->object_bytes < bytes) {
      return false;
    }
    auto want = payload(seed, bytes);
    return std::memcmp(tier_->data(test_key(key)), want.data(), bytes) == 0;
  }
  // Puts other keys until key's segment is reclaimed.
  void reclaim(uint64_t key) {
    for (uint64_t i = 100; h_.store->contains(test_key(key)); ++i) {
      ASSERT_LT(i, 130u) << "the store never reclaimed key " << key;
      ASSERT_TRUE(put(i, i).is_ok());
    }
    bool flushed = false;  // after the eviction listener's task, posted before this one
    h_.ex.post([&] { flushed = true; });
    ASSERT_TRUE(run_until(h_.ex, [&] { return flushed; }));
  }

  TempDir dir_;
  StoreHarness h_;
  std::unique_ptr<FastTier> tier_;
  std::unique_ptr<StagingProvider> provider_;
};

TEST_F(ProviderIdentity, ARePutAfterReclamationIsStagedAfreshNotServedFromTheStaleCopy) {
  ASSERT_TRUE(put(1, 1).is_ok());
  ASSERT_TRUE(stage(1, 1).is_ok());
  ASSERT_TRUE(tier_holds(1, 1));
  ASSERT_TRUE(provider_->release(1).is_ok());
  reclaim(1);
  ASSERT_TRUE(put(1, 2).is_ok());  // the same key, new bytes, same length
  ASSERT_TRUE(stage(2, 1).is_ok());
  EXPECT_TRUE(tier_holds(1, 2)) << "the claim was served the old generation's bytes";
  EXPECT_EQ(tier_->find(test_key(1))->generation, h_.store->lookup(test_key(1))->generation);
  EXPECT_EQ(provider_->stats().stale_copies_dropped, 1u);
  ASSERT_TRUE(provider_->release(2).is_ok());
  EXPECT_TRUE(provider_->check_invariants().is_ok());
}

TEST_F(ProviderIdentity, ALargerRePutAfterReclamationIsReadWhole) {
  ASSERT_TRUE(put(1, 1, 100 * kKiB).is_ok());
  ASSERT_TRUE(stage(1, 1, 100 * kKiB).is_ok());
  ASSERT_TRUE(provider_->release(1).is_ok());
  reclaim(1);
  ASSERT_TRUE(put(1, 3).is_ok());  // 300 KiB now
  ASSERT_TRUE(stage(2, 1).is_ok());
  EXPECT_TRUE(tier_holds(1, 3)) << "a ready claim with a copy shorter than its object";
  ASSERT_TRUE(provider_->release(2).is_ok());
}

TEST_F(ProviderIdentity, AStaleCopyAnotherClaimProtectsRefusesTheNewClaim) {
  ASSERT_TRUE(put(1, 1).is_ok());
  ASSERT_TRUE(stage(1, 1).is_ok());  // claim 1 protects generation 1
  ASSERT_TRUE(put(1, 4).is_ok());    // other bytes under the key: a new generation
  Status st = stage(2, 1);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.to_string();
  EXPECT_TRUE(tier_holds(1, 1)) << "claim 1 keeps the bytes it validated";
  ASSERT_TRUE(provider_->release(1).is_ok());
  ASSERT_TRUE(stage(3, 1).is_ok());
  EXPECT_TRUE(tier_holds(1, 4));
  ASSERT_TRUE(provider_->release(3).is_ok());
}

TEST_F(ProviderIdentity, TheOrdinaryPathNeverHoldsAStaleCopy) {
  ASSERT_TRUE(put(1, 1).is_ok());
  ASSERT_TRUE(stage(1, 1).is_ok());
  ASSERT_TRUE(provider_->release(1).is_ok());
  ASSERT_TRUE(put(1, 5).is_ok());
  std::optional<Status> done;
  Result<ClaimPhase> r = provider_->start_ordinary(
      StagingClaim{2, {{test_key(1), kBytes}}}, [&](ClaimId, Status st) { done = st; });
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  if (*r != ClaimPhase::kOrdinaryReady) {
    ASSERT_TRUE(run_until(h_.ex, [&] { return done.has_value(); }));
    ASSERT_TRUE(done->is_ok()) << done->to_string();
  }
  EXPECT_TRUE(tier_holds(1, 5)) << "the ordinary path held the old generation";
  ASSERT_TRUE(provider_->release(2).is_ok());
}

// Simulated: a re-put lands while the claim's read waits in the queue behind another read.
TEST(ProviderIdentitySim, ARePutWhileTheReadIsQueuedFailsTheClaimInsteadOfServingOtherBytes) {
  SimStackOptions o;
  o.max_reads_in_flight = 1;
  SimStack s(o);
  ASSERT_EQ(*s.commit(claim_of(1, {1})), CommitState::kStaging);  // in flight: 62.5 ms
  ASSERT_EQ(*s.commit(claim_of(2, {2})), CommitState::kStaging);  // queued behind it
  std::optional<Status> put;
  s.store->put(obj(2), {0, 256}, nullptr, kObj, [&](Status st) { put = st; });
  s.ex.run();
  ASSERT_TRUE(put.has_value() && put->is_ok());
  ASSERT_TRUE(s.ready.at(1).second.is_ok());
  const Status& second = s.ready.at(2).second;
  EXPECT_EQ(second.code(), StatusCode::kFailedPrecondition) << second.to_string();
  EXPECT_EQ(s.provider->stats().changed_under_claim, 1u);
  EXPECT_FALSE(s.tier->resident(obj(2)));
  EXPECT_TRUE(s.provider->check_invariants().is_ok());
}

}  // namespace
}  // namespace tempokv::testing
