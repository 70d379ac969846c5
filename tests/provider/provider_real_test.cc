// Real mode: the provider stages from a store on real files (io_uring or the thread pool, with
// O_DIRECT) into a real fast tier, and the bytes that land are the bytes that were put.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <tuple>

#include "executor/real_executor.h"
#include "fasttier/fast_tier.h"
#include "provider/staging_provider.h"
#include "ssd/uring_engine.h"
#include "store/store_test_util.h"

namespace tempokv::testing {
namespace {

constexpr uint64_t kChunk = 1 * kMiB;
constexpr uint64_t kFinal = 100'000;  // a final chunk that is not a multiple of 4 KiB

uint64_t chunk_bytes(uint64_t i) { return i % 4 == 0 ? kFinal : kChunk; }

class ProviderReal : public ::testing::TestWithParam<std::tuple<SsdEngineKind, BackingKind>> {
 protected:
  void SetUp() override {
    if (!dir_.supports_direct()) GTEST_SKIP() << dir_.path() << " refuses O_DIRECT";
    StoreOptions so;
    so.dir = dir_.path();
    so.segment_bytes = 16 * kMiB;
    so.capacity_bytes = 256 * kMiB;
    so.max_object_bytes = 4 * kMiB;
    Status st = h_.start(so, std::get<0>(GetParam()));
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    for (uint64_t i = 1; i <= 8; ++i) {
      ASSERT_TRUE(h_.put_seeded(i, chunk_bytes(i)).is_ok());
    }
    FastTierOptions to;
    to.capacity_bytes = 8 * kChunk;
    to.protected_budget_bytes = 4 * kChunk;
    to.slot_bytes = kChunk;
    to.backing = std::get<1>(GetParam());
    auto tier = FastTier::create(to);
    ASSERT_TRUE(tier.is_ok()) << tier.status().to_string();
    tier_ = std::move(tier).value();
    ProviderOptions po;
    po.max_reads_in_flight = 3;
    auto p = StagingProvider::create(h_.ex, *h_.store, *tier_, po);
    ASSERT_TRUE(p.is_ok());
    provider_ = std::move(p).value();
  }
  void TearDown() override {
    provider_.reset();
    if (h_.store) {
      EXPECT_TRUE(h_.close().is_ok());
    }
  }

  StagingClaim claim(ClaimId id, std::vector<uint64_t> objects) {
    StagingClaim c{id, {}};
    for (uint64_t i : objects) c.objects.push_back({test_key(i), chunk_bytes(i)});
    return c;
  }
  void expect_bytes(uint64_t i) {
    const std::byte* p = tier_->data(test_key(i));
    ASSERT_NE(p, nullptr);
    auto want = payload(i, chunk_bytes(i));
    EXPECT_EQ(std::memcmp(p, want.data(), want.size()), 0) << "object " << i;
  }

  TempDir dir_;
  StoreHarness h_;
  std::unique_ptr<FastTier> tier_;
  std::unique_ptr<StagingProvider> provider_;
};

TEST_P(ProviderReal, StagesRealBytesIntoTheFastTier) {
  std::map<ClaimId, Status> done;
  auto cb = [&](ClaimId id, Status st) { done[id] = st; };
  ASSERT_EQ(*provider_->commit(claim(1, {1, 2, 3, 4}), cb), CommitState::kStaging);
  ASSERT_TRUE(run_until(h_.ex, [&] { return done.count(1) != 0; }));
  ASSERT_TRUE(done[1].is_ok()) << done[1].to_string();
  for (uint64_t i = 1; i <= 4; ++i) expect_bytes(i);
  EXPECT_EQ(tier_->stats().protected_bytes, 4 * kChunk);
  EXPECT_GT(provider_->stats().read_bytes_per_s, 0.0);
  ASSERT_TRUE(provider_->release(1).is_ok());
  EXPECT_TRUE(provider_->check_invariants().is_ok());
}

TEST_P(ProviderReal, OrdinaryPathReadsTheRestIntoUnprotectedSpace) {
  std::map<ClaimId, Status> done;
  auto cb = [&](ClaimId id, Status st) { done[id] = st; };
  ASSERT_EQ(*provider_->commit(claim(1, {5}), cb), CommitState::kStaging);
  ASSERT_TRUE(run_until(h_.ex, [&] { return done.count(1) != 0; }));
  ASSERT_TRUE(provider_->release(1).is_ok());
  ASSERT_EQ(*provider_->start_ordinary(claim(2, {5, 6, 7, 8}), cb), ClaimPhase::kOrdinaryReading);
  ASSERT_TRUE(run_until(h_.ex, [&] { return done.count(2) != 0; }));
  ASSERT_TRUE(done[2].is_ok()) << done[2].to_string();
  for (uint64_t i = 5; i <= 8; ++i) expect_bytes(i);
  EXPECT_EQ(tier_->stats().protected_bytes + tier_->stats().reserved_bytes, 0u);
  ASSERT_TRUE(provider_->release(2).is_ok());
  EXPECT_TRUE(provider_->check_invariants().is_ok());
}

TEST_P(ProviderReal, StagingReadsLandInTheTierThroughRegisteredBuffers) {
  if (std::get<0>(GetParam()) != SsdEngineKind::kUring) GTEST_SKIP() << "io_uring only";
  if (geteuid() != 0) GTEST_SKIP() << "fixed buffers need RLIMIT_MEMLOCK headroom (run as root)";
  auto* uring = dynamic_cast<UringEngine*>(h_.engine.get());
  if (uring == nullptr || !uring->buffers_registered()) GTEST_SKIP() << "no registered buffers";
  uint64_t before = h_.engine->stats().fixed_buffer_ios;
  std::map<ClaimId, Status> done;
  auto cb = [&](ClaimId id, Status st) { done[id] = st; };
  ASSERT_EQ(*provider_->commit(claim(1, {1, 2, 3}), cb), CommitState::kStaging);
  ASSERT_TRUE(run_until(h_.ex, [&] { return done.count(1) != 0; }));
  ASSERT_TRUE(done[1].is_ok()) << done[1].to_string();
  for (uint64_t i = 1; i <= 3; ++i) expect_bytes(i);
  // The provider registered the tier's arena with the store's engine: every read used it.
  EXPECT_EQ(h_.engine->stats().fixed_buffer_ios - before, 3u);
  ASSERT_TRUE(provider_->release(1).is_ok());
}

INSTANTIATE_TEST_SUITE_P(
    Engines, ProviderReal,
    ::testing::Combine(::testing::Values(SsdEngineKind::kUring, SsdEngineKind::kThreadPool),
                       ::testing::Values(BackingKind::kAnonymous, BackingKind::kMemfd)));

}  // namespace
}  // namespace tempokv::testing
