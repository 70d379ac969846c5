// The TTR bounds and the shared projection the controller's evaluation relies on
// (StagingProvider::TtrBoundWalk::range, StagingProvider::TtrWalk), on a deep queue: claims
// committed with use times spread over seconds, so a claim asked about may need new reads after
// most of the queue, only reads queued ahead of it or in flight, or nothing. With fixed seeds, at
// random moments, every range must hold the exact TTR (ttr_reference()) and one walk in use
// order must give exactly each claim's TTR. With reads of one size the range must also be
// tight: within a few microseconds for a claim with new reads, and within (slots - 1) reads
// above the exact value for any claim, whatever is queued between its reads and its use time.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "provider/sim_fixture.h"

namespace tempokv::testing {
namespace {

constexpr uint64_t kObjects = 96;
constexpr uint64_t kChurned = 80;  // objects 1..80 are committed; 81..96 never read
constexpr uint32_t kSlots = 4;

struct WalkCase {
  uint64_t seed;
  uint64_t small_every;  // 0: every read has one size
};

struct Counts {
  uint64_t claims = 0, with_new_reads = 0;
  uint64_t churned_only = 0;  // claims of committed objects only: often all read or queued ahead
};

class WalkRun {
 public:
  explicit WalkRun(const WalkCase& c)
      : s_({.capacity_objects = 80,
            .budget_objects = 64,
            .max_reads_in_flight = kSlots,
            .stored_objects = kObjects,
            .small_every = c.small_every}),
        rng_(c.seed),
        small_every_(c.small_every) {}

  // Commits claims with use times up to 4 s out (a deep queue in use order), releases some
  // ready ones, and lets time pass.
  void churn() {
    for (int k = 0; k < 3; ++k) {
      const ClaimId id = next_id_++;
      if (s_.commit(random_claim(id, 3, kChurned)).is_ok()) live_.push_back(id);
    }
    for (auto it = live_.begin(); it != live_.end();) {
      auto ready = s_.ready.find(*it);
      const bool staged = s_.provider->phase(*it) == ClaimPhase::kStageReady;
      if (staged && pick(2) == 0) {
        ASSERT_TRUE(s_.provider->release(*it).is_ok());
        it = live_.erase(it);
      } else if (ready != s_.ready.end() && !ready->second.second.is_ok()) {
        it = live_.erase(it);  // failed: gone from the provider
      } else {
        ++it;
      }
    }
    s_.ex.run_for(std::chrono::microseconds(pick(150'000)));
  }

  // Claims at this moment, half of them with an object never read (so a new read): bounds hold
  // the exact TTR, and one walk in use order gives it exactly.
  void check_claims(Counts& counts) {
    std::vector<StagingClaim> claims;
    std::vector<bool> fresh;
    for (int k = 0; k < 10; ++k) {
      const bool with_new = k % 2 == 0;
      claims.push_back(random_claim(1'000'000 + k, 4, kChurned));
      if (with_new) {
        const uint64_t o = kChurned + 1 + pick(kObjects - kChurned);
        claims.back().objects.push_back({obj(o), obj_bytes(o, small_every_)});
      }
    }
    std::sort(claims.begin(), claims.end(), [](const StagingClaim& a, const StagingClaim& b) {
      return *a.use_at < *b.use_at;
    });
    StagingProvider::TtrBoundWalk bounds = s_.provider->ttr_bound_walk();
    StagingProvider::TtrWalk exact = s_.provider->ttr_walk();
    for (const StagingClaim& c : claims) {
      SCOPED_TRACE("claim used in " + std::to_string(to_seconds(*c.use_at - s_.ex.now())) + " s");
      const Duration ttr = s_.provider->ttr_reference(c);
      const StagingProvider::TtrBoundWalk::Range range = bounds.range(c);
      ASSERT_LE(range.lo, ttr);
      ASSERT_GE(range.hi, ttr);
      ASSERT_EQ(exact.ttr(c), ttr);
      ++counts.claims;
      if (small_every_ != 0) continue;
      const bool with_new = std::any_of(c.objects.begin(), c.objects.end(), [](const auto& e) {
        return e.key.hash > kChurned && e.key.hash <= kObjects;
      });
      if (with_new) {
        ++counts.with_new_reads;
        ASSERT_LE(range.hi - range.lo, std::chrono::microseconds(3));
      }
      ASSERT_LE(range.hi - ttr, (kSlots - 1) * kObjTime + std::chrono::microseconds(2));
    }
    // A claim used sooner than the last one projected is answered exactly too.
    ASSERT_EQ(exact.ttr(claims.front()), s_.provider->ttr_reference(claims.front()));
    // A fresh walk over them again in use order: claims whose reads are all in flight or queued
    // ahead stop the projection where their last read leaves service (before their use time's
    // checkpoint), and the claims after them continue from there exactly.
    StagingProvider::TtrWalk again = s_.provider->ttr_walk();
    for (const StagingClaim& c : claims) {
      if (std::none_of(c.objects.begin(), c.objects.end(),
                       [](const auto& e) { return e.key.hash > kChurned; })) {
        ++counts.churned_only;
      }
      ASSERT_EQ(again.ttr(c), s_.provider->ttr_reference(c));
    }
  }

  uint64_t queued() const { return s_.provider->stats().queued_reads; }

 private:
  uint64_t pick(uint64_t n) { return rng_() % n; }

  StagingClaim random_claim(ClaimId id, uint64_t max_objects, uint64_t pool) {
    StagingClaim c;
    c.id = id;
    const uint64_t n = 1 + pick(max_objects);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t o = 1 + pick(pool);
      // Distinct objects (a repeated key leaves lo at 0: TtrBoundWalk::range).
      if (std::none_of(c.objects.begin(), c.objects.end(),
                       [&](const ManifestEntry& e) { return e.key == obj(o); })) {
        c.objects.push_back({obj(o), obj_bytes(o, small_every_)});
      }
    }
    c.use_at = s_.ex.now() + std::chrono::microseconds(pick(4'000'000));
    return c;
  }

  SimStack s_;
  std::mt19937_64 rng_;
  uint64_t small_every_;
  std::vector<ClaimId> live_;
  ClaimId next_id_ = 1;
};

class ProviderWalk : public ::testing::TestWithParam<WalkCase> {};

TEST_P(ProviderWalk, BoundsHoldAndTheWalkIsExactOnADeepQueue) {
  WalkRun run(GetParam());
  Counts counts;
  uint64_t deepest = 0;
  for (int i = 0; i < 400; ++i) {
    ASSERT_NO_FATAL_FAILURE(run.churn()) << "step " << i;
    deepest = std::max(deepest, run.queued());
    if (i % 4 == 3) {
      ASSERT_NO_FATAL_FAILURE(run.check_claims(counts)) << "step " << i;
    }
  }
  EXPECT_GT(deepest, 3 * kSlots);  // the queue did get deep
  EXPECT_EQ(counts.claims, 1000u);
  if (GetParam().small_every == 0) {
    EXPECT_GT(counts.with_new_reads, 300u);
  }
  EXPECT_GT(counts.churned_only, 100u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, ProviderWalk,
                         ::testing::Values(WalkCase{1, 0}, WalkCase{2, 0}, WalkCase{3, 5},
                                           WalkCase{4, 5}));

}  // namespace
}  // namespace tempokv::testing
