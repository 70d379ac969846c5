// Randomized provider test: thousands of commits, cancels, releases, transfers, ordinary claims
// and injected read failures with fixed seeds, checking the provider's and the fast tier's
// invariants after every step and that nothing leaks at the end; and that a claim's own share of
// a commit's cost (OwnCost) falls only by what the entry listener reports for its objects.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "provider/sim_fixture.h"

namespace tempokv::testing {
namespace {

struct ModelClaim {
  bool ordinary = false;
  bool ready = false;
  uint32_t transfers = 0;
};

class RandomRun {
 public:
  RandomRun(uint64_t seed, IssueOrder order)
      : s_({.capacity_objects = 12,
            .budget_objects = 6,
            .max_reads_in_flight = 3,
            .stored_objects = kObjects,
            .latency = std::chrono::microseconds(100),
            .small_every = 5,
            .issue_order = order}),
        rng_(seed) {
    s_.faults->set_read_error_probability(0.05);
    s_.provider->set_entry_listener([this](const Key& k, uint64_t budget_bytes,
                                           uint64_t occupied_bytes) {
      entries_[k].budget_bytes += budget_bytes;
      entries_[k].occupied_bytes += occupied_bytes;
    });
  }

  void step() {
    const std::map<Key, StagingProvider::OwnCost> before = shares();
    entries_.clear();
    ASSERT_NO_FATAL_FAILURE(act());
    // Each object's share (a claim's share is the sum of its objects') fell by at most what the
    // listener reported for it during the step.
    for (const auto& [k, after] : shares()) {
      const StagingProvider::OwnCost& was = before.at(k);
      const StagingProvider::OwnCost told =
          entries_.count(k) ? entries_.at(k) : StagingProvider::OwnCost{};
      if (after.budget_bytes < was.budget_bytes) {
        ASSERT_LE(was.budget_bytes - after.budget_bytes, told.budget_bytes) << k.to_string();
      }
      if (after.occupied_bytes < was.occupied_bytes) {
        ASSERT_LE(was.occupied_bytes - after.occupied_bytes, told.occupied_bytes) << k.to_string();
      }
      entries_seen_ += told.budget_bytes + told.occupied_bytes > 0;
    }
  }

  void act() {
    switch (pick(12)) {
      case 0:
      case 1:
      case 2:
        commit();
        break;
      case 3:
        ordinary();
        break;
      case 4:
      case 5:
        cancel();
        break;
      case 6:
      case 7:
        release();
        break;
      case 8:
        transfer();
        break;
      case 9: {
        // The shared projection behind ttr() must give exactly the per-claim projection's value,
        // for several claims against one snapshot, and TtrBoundWalk must bound it.
        std::vector<StagingClaim> claims;
        for (int k = 0; k < 3; ++k) {
          StagingClaim c = random_claim(0);
          ASSERT_EQ(s_.provider->ttr(c), s_.provider->ttr_reference(c));
          if (!c.use_at) c.use_at = s_.ex.now();
          claims.push_back(std::move(c));
        }
        // One bound walk over them in use order: each bound is at least the claim's TTR.
        std::sort(claims.begin(), claims.end(),
                  [](const StagingClaim& a, const StagingClaim& b) { return *a.use_at < *b.use_at; });
        StagingProvider::TtrBoundWalk bounds = s_.provider->ttr_bound_walk();
        for (const StagingClaim& c : claims) {
          uint64_t bytes = 0;
          for (const ManifestEntry& e : c.objects) bytes += round_up(e.bytes, kBlockBytes);
          ASSERT_GE(bounds.bound(*c.use_at, bytes), s_.provider->ttr(c));
          // The range from the prefix sums holds the exact TTR, and is tighter than the bound.
          const StagingProvider::TtrBoundWalk::Range range = bounds.range(c);
          const Duration ttr = s_.provider->ttr_reference(c);
          ASSERT_LE(range.lo, ttr);
          ASSERT_GE(range.hi, ttr);
          ASSERT_LE(range.hi, bounds.bound(*c.use_at, bytes));
          const bool resident =
              std::all_of(c.objects.begin(), c.objects.end(),
                          [&](const ManifestEntry& e) { return s_.tier->resident(e.key); });
          ASSERT_EQ(range.all_resident, resident);
        }
        // The bound from the queue's prefix sums equals the naive walk of the queue, in and out of
        // use order, whatever queued, issued, completed, moved up or cancelled reads since.
        // (Searched from the last answer outwards: nearby, far, repeated, before and after it.)
        for (int k = 0; k < 16; ++k) {
          const TimePoint use_at = s_.ex.now() + std::chrono::microseconds(pick(1'200'000));
          const uint64_t bytes = pick(4) * kObj;
          ASSERT_EQ(bounds.bound(use_at, bytes), s_.provider->ttr_bound_reference(use_at, bytes));
        }
        if (!live_.empty() && pick(2) == 0) {
          // A claim used sooner: its queued reads move up (out of the middle of the queue).
          auto it = live_.begin();
          std::advance(it, static_cast<std::ptrdiff_t>(pick(live_.size())));
          ASSERT_TRUE(s_.provider->expedite(it->first, s_.ex.now()).is_ok());
        }
        // One exact walk over them in use order gives exactly each claim's TTR; a claim used
        // earlier than the last one asked (out of order) too.
        StagingProvider::TtrWalk exact = s_.provider->ttr_walk();
        for (const StagingClaim& c : claims) {
          ASSERT_EQ(exact.ttr(c), s_.provider->ttr_reference(c));
        }
        ASSERT_EQ(exact.ttr(claims.front()), s_.provider->ttr_reference(claims.front()));
        break;
      }
      default:
        s_.ex.run_for(std::chrono::microseconds(pick(200'000)));
        break;
    }
    check();
  }

  // Cancels everything, lets reads drain, and checks that every counter is back to zero.
  void finish() {
    for (auto& [id, m] : live_) {
      while (m.transfers > 0) {
        ASSERT_TRUE(s_.provider->end_transfer(id).is_ok());
        --m.transfers;
      }
      ASSERT_TRUE(s_.provider->cancel(id).is_ok());
    }
    live_.clear();
    s_.faults->set_read_error_probability(0);
    s_.ex.run();
    check();
    ProviderStats p = s_.provider->stats();
    FastTierStats t = s_.tier->stats();
    EXPECT_EQ(p.claims, 0u);
    EXPECT_EQ(p.queued_reads, 0u);
    EXPECT_EQ(p.in_flight_reads, 0u);
    EXPECT_EQ(t.protected_bytes, 0u);
    EXPECT_EQ(t.reserved_bytes, 0u);
    EXPECT_EQ(t.pinned_bytes, 0u);
    EXPECT_EQ(t.filling_bytes, 0u);
    EXPECT_EQ(t.evictable_bytes, t.resident_bytes);  // what is left is plain cache
    EXPECT_EQ(t.objects, t.resident_objects);
    EXPECT_GT(p.commits, 100u);
    EXPECT_GT(p.refusals, 0u);
    EXPECT_GT(p.failed, 0u);
    EXPECT_GT(p.staged, 0u);
    EXPECT_GT(t.evictions, 0u);
    EXPECT_GT(entries_seen_, 100u);
  }

 private:
  static constexpr uint64_t kObjects = 40;

  uint64_t pick(uint64_t n) { return rng_() % n; }

  // Each object's share of a commit of it alone (StagingProvider::refused_now, which counts
  // nothing and changes nothing the steps read).
  std::map<Key, StagingProvider::OwnCost> shares() {
    std::map<Key, StagingProvider::OwnCost> out;
    for (uint64_t o = 1; o <= kObjects; ++o) {
      StagingClaim c{0, {{obj(o), obj_bytes(o, 5)}}};
      (void)s_.provider->refused_now(c);
      out[obj(o)] = s_.provider->last_own_cost();
    }
    return out;
  }

  StagingClaim random_claim(ClaimId id) {
    StagingClaim c;
    c.id = id;
    uint64_t n = 1 + pick(4);
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t o = 1 + pick(kObjects);
      c.objects.push_back({obj(o), obj_bytes(o, 5)});
    }
    // Half the claims carry a use time, so reads are queued out of commit order and the
    // projection runs both with the whole queue ahead and with only part of it; some of those
    // are late already (used in the past), whose reads by commit still queue behind every read.
    if (pick(2) == 0) {
      c.use_at = s_.ex.now() + std::chrono::microseconds(pick(1'000'000));
      if (pick(8) == 0) *c.use_at -= std::chrono::microseconds(1'000'000);
    }
    return c;
  }

  ReadyCallback on_ready() {
    return [this](ClaimId id, Status st) {
      auto it = live_.find(id);
      ASSERT_NE(it, live_.end()) << "callback for unknown claim " << id;
      if (st.is_ok()) {
        it->second.ready = true;
      } else {
        live_.erase(it);  // a failed claim is gone from the provider
      }
    };
  }

  void commit() {
    ClaimId id = next_id_++;
    StagingClaim c = random_claim(id);
    // The refusal check alone (no store lookup, nothing committed or counted) decides exactly as
    // the commit that follows, with the same shortfalls (every object is in the store).
    const uint64_t refusals = s_.provider->stats().refusals;
    const bool refused = s_.provider->refused_now(c);
    // Refused exactly when its share is beyond the budget's room or the capacity's.
    const StagingProvider::OwnCost share = s_.provider->last_own_cost();
    ASSERT_EQ(refused, static_cast<int64_t>(share.budget_bytes) > s_.provider->budget_room() ||
                           share.occupied_bytes > s_.provider->capacity_room());
    const uint64_t budget_short = s_.provider->last_refusal_budget_shortfall();
    const uint64_t capacity_short = s_.provider->last_refusal_capacity_shortfall();
    ASSERT_EQ(s_.provider->stats().refusals, refusals);
    ASSERT_EQ(s_.provider->phase(id), std::nullopt);
    // Its TTR before and after the commit (ttr()'s projection against the reference walk).
    ASSERT_EQ(s_.provider->ttr(c), s_.provider->ttr_reference(c));
    auto r = s_.provider->commit(c, on_ready());
    if (r.is_ok()) {
      ASSERT_EQ(s_.provider->ttr(c), s_.provider->ttr_reference(c));
    }
    ASSERT_EQ(refused, !r.is_ok());
    if (!r.is_ok()) {
      ASSERT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().to_string();
      ASSERT_EQ(s_.provider->phase(id), std::nullopt);
      ASSERT_EQ(s_.provider->last_refusal_budget_shortfall(), budget_short);
      ASSERT_EQ(s_.provider->last_refusal_capacity_shortfall(), capacity_short);
      return;
    }
    live_[id] = {false, *r == CommitState::kStageReady, 0};
  }

  void ordinary() {
    ClaimId id = next_id_++;
    auto r = s_.provider->start_ordinary(random_claim(id), on_ready());
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    live_[id] = {true, *r == ClaimPhase::kOrdinaryReady, 0};
  }

  std::map<ClaimId, ModelClaim>::iterator random_live() {
    if (live_.empty()) return live_.end();
    auto it = live_.begin();
    std::advance(it, static_cast<long>(pick(live_.size())));
    return it;
  }

  void cancel() {
    auto it = random_live();
    if (it == live_.end()) return;
    // A claim under transfer may be cancelled; its protection waits for end_transfer, which the
    // copy path still calls.
    while (it->second.transfers > 0) {
      ASSERT_TRUE(s_.provider->end_transfer(it->first).is_ok());
      --it->second.transfers;
    }
    ASSERT_TRUE(s_.provider->cancel(it->first).is_ok());
    live_.erase(it);
  }

  void release() {
    auto it = random_live();
    if (it == live_.end() || !it->second.ready || it->second.transfers > 0) return;
    ASSERT_TRUE(s_.provider->release(it->first).is_ok());
    live_.erase(it);
  }

  void transfer() {
    auto it = random_live();
    if (it == live_.end() || !it->second.ready) return;
    if (it->second.transfers > 0 && pick(2) == 0) {
      ASSERT_TRUE(s_.provider->end_transfer(it->first).is_ok());
      --it->second.transfers;
    } else {
      ASSERT_TRUE(s_.provider->begin_transfer(it->first).is_ok());
      ++it->second.transfers;
    }
  }

  void check() {
    ASSERT_TRUE(s_.provider->check_invariants().is_ok())
        << s_.provider->check_invariants().to_string();
    FastTierStats t = s_.tier->stats();
    ASSERT_LE(t.protected_bytes + t.reserved_bytes, t.budget_bytes);
    ASSERT_LE(t.resident_bytes + t.filling_bytes, t.capacity_bytes);
    for (const auto& [id, m] : live_) {
      auto phase = s_.provider->phase(id);
      ASSERT_TRUE(phase.has_value()) << "claim " << id;
      ClaimPhase want = m.ordinary
                            ? (m.ready ? ClaimPhase::kOrdinaryReady : ClaimPhase::kOrdinaryReading)
                            : (m.ready ? ClaimPhase::kStageReady : ClaimPhase::kStaging);
      ASSERT_EQ(*phase, want) << "claim " << id;
    }
  }

  SimStack s_;
  std::mt19937_64 rng_;
  std::map<ClaimId, ModelClaim> live_;
  ClaimId next_id_ = 1;
  std::map<Key, StagingProvider::OwnCost> entries_;  // the step's entries, summed by key
  uint64_t entries_seen_ = 0;
};

// Each seed in both issue orders: the projections and bounds must hold in either.
class ProviderRandom : public ::testing::TestWithParam<std::tuple<uint64_t, IssueOrder>> {};

TEST_P(ProviderRandom, InvariantsHoldAfterEveryStepAndNothingLeaks) {
  RandomRun run(std::get<0>(GetParam()), std::get<1>(GetParam()));
  for (int i = 0; i < 4000; ++i) {
    ASSERT_NO_FATAL_FAILURE(run.step()) << "step " << i;
  }
  run.finish();
}

INSTANTIATE_TEST_SUITE_P(Seeds, ProviderRandom,
                         ::testing::Combine(::testing::Values(1, 2, 3, 42),
                                            ::testing::Values(IssueOrder::kUse,
                                                              IssueOrder::kCommit)));

}  // namespace
}  // namespace tempokv::testing
