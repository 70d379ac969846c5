// Claims on objects only a remote tier holds (remote_source.h), in simulated time: the provider
// holds them, their TTR adds the remote part and the store's write, and TempoKV stages them in two
// stages: the fetch starts at exactly use - TTR with nothing reserved (the first stage,
// StagingProvider::prefetch), and the commit comes at use - (write + read), the local part's
// TTR (ControllerOptions::remote_prefetch off: the commit at use - TTR, the fetch its staging). A
// fetch that fails after the commit fails the claim and gives its protection back; one that fails
// before it fails no claim and is not started again ahead of the commit.
//
// Numbers: the simulated stack of sim_fixture.h (64 MiB objects read in 62.5 ms alone), its SSD
// writing at 4 GiB/s with write_cost 0.25 (the store's write of one object's record, 64 MiB and a
// 4 KiB header: 15.625954 ms, rounded to the nanosecond), and a remote node of 10 ms latency at
// 0.5 GiB/s (one object: 135 ms). TTR of one remote object alone: 135 + 15.625954 + 62.5 =
// 213.125954 ms.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <vector>

#include "controller/controller_fixture.h"
#include "provider/remote_source.h"

namespace tempokv {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using testing::Fixture;
using testing::kObj;
using testing::kRate;
using testing::manifest;
using testing::obj;
using testing::SimStackOptions;

// A remote tier in simulated time: one node, latency + bytes in flight / rate per fetch (fetches
// share the node: each is answered when the bytes ahead of it and its own have moved), then the
// object is put in the simulated store and `done` gets its generation.
class SimRemote final : public RemoteSource {
 public:
  SimRemote(SimExecutor& ex, Store& store) : ex_(ex), store_(store) {}

  bool holds(const Key& key) const override { return held.count(key) != 0; }
  std::optional<Duration> ttr(std::span<const Object> objects) const override {
    if (unhealthy) return std::nullopt;
    uint64_t bytes = 0;
    for (const Object& o : objects) bytes += o.bytes;
    return time_for(bytes);
  }
  Duration ttr_bound(uint64_t bytes) const override { return time_for(bytes); }
  void fetch(const Key& key, uint64_t payload_bytes, FetchDone done) override {
    ++fetches;
    started_at.push_back(ex_.now());
    const Duration took =
        !fail_with.is_ok() && fail_after ? *fail_after : time_for(payload_bytes) + slow_by;
    in_flight_ += payload_bytes;
    ex_.after(took, [this, key, payload_bytes, done = std::move(done)] {
      in_flight_ -= payload_bytes;
      if (!fail_with.is_ok()) return done(fail_with);
      store_.put(key, {0, 256}, nullptr, payload_bytes, [this, key, done](Status st) {
        if (!st.is_ok()) return done(st);
        done(store_.lookup(key)->generation);
      });
    });
  }

  std::set<Key> held;
  double bytes_per_s = 0.5 * kRate;
  Duration latency = milliseconds(10);
  bool unhealthy = false;
  Status fail_with;  // a fetch answers this error instead (after its time) when set
  std::optional<Duration> fail_after;  // and then after this instead of its time
  Duration slow_by{0};                 // every fetch takes this much longer than ttr() says
  int fetches = 0;
  std::vector<TimePoint> started_at;  // of each fetch

 private:
  Duration time_for(uint64_t bytes) const {
    const double s = static_cast<double>(in_flight_ + bytes) / bytes_per_s;
    return latency + Duration(std::llround(s * 1e9));
  }
  SimExecutor& ex_;
  Store& store_;
  uint64_t in_flight_ = 0;
};

SimStackOptions remote_stack() {
  SimStackOptions o;
  o.write_bytes_per_s = 4 * kRate;
  o.write_cost = 0.25;
  return o;
}

constexpr uint64_t kRemoteObj = 100;  // obj(100): not in the store (it holds obj(1)..obj(64))
const Duration kStoreWrite = std::chrono::nanoseconds(15'625'954);
const Duration kRead = microseconds(62'500);

struct RemoteFixture : Fixture {
  explicit RemoteFixture(const char* policy, ControllerOptions co = {})
      : Fixture(policy, remote_stack(), co), remote(stack.ex, *stack.store) {
    remote.held = {obj(kRemoteObj), obj(kRemoteObj + 1)};
    stack.provider->set_remote_source(&remote);
  }
  ~RemoteFixture() { stack.provider->set_remote_source(nullptr); }
  uint64_t held_bytes() {
    const FastTierStats s = stack.tier->stats();
    return s.protected_bytes + s.reserved_bytes;
  }
  // Reports `id` on `objects` used at `use` (from t0), requests its retrieval then and copies
  // it for 10 ms. Returns the claim's info once the run is over.
  ClaimInfo run_claim(ClaimId id, std::vector<uint64_t> objects, Duration use) {
    EXPECT_TRUE(controller->report(id, manifest(std::move(objects)), use).is_ok());
    EXPECT_TRUE(controller->update({}, std::vector<ClaimId>{id}).is_ok());
    stack.ex.at(at(use), [this, id] {
      EXPECT_TRUE(controller->update({}, std::vector<ClaimId>{}).is_ok());
      retrieve(id, milliseconds(10));
    });
    stack.ex.run();
    return info(id);
  }
  SimRemote remote;
};

TEST(ProviderRemote, TtrOfARemoteOnlyObjectIsTheRemotePartPlusTheStoreWritePlusTheRead) {
  RemoteFixture f("tempokv");
  const StagingClaim c = testing::claim_of(1, {kRemoteObj});
  EXPECT_EQ(f.stack.provider->ttr(c), milliseconds(135) + kStoreWrite + kRead);
  EXPECT_EQ(f.stack.provider->ttr_reference(c), f.stack.provider->ttr(c));
  // The bounds the controller skips claims by hold it.
  StagingProvider::TtrBoundWalk bounds = f.stack.provider->ttr_bound_walk();
  const StagingProvider::TtrBoundWalk::Range range = bounds.range(c);
  EXPECT_LE(range.lo, f.stack.provider->ttr(c));
  EXPECT_GE(range.hi, f.stack.provider->ttr(c));
  EXPECT_GE(bounds.bound(f.stack.ex.now(), kObj), f.stack.provider->ttr(c));
  EXPECT_GE(f.stack.provider->ttr_bound(kObj), f.stack.provider->ttr(c));
  EXPECT_GE(f.stack.provider->drained_ttr_bound(kObj), f.stack.provider->ttr(c));
  EXPECT_EQ(f.stack.provider->ttr_walk().ttr(c), f.stack.provider->ttr(c));
  EXPECT_EQ(f.stack.provider->commit_wait(c, f.stack.provider->ttr(c)), Duration::zero());
  // A local object of the same size: the read alone.
  EXPECT_EQ(f.stack.provider->ttr(testing::claim_of(2, {1})), kRead);
}

class ProviderRemoteScan : public ::testing::TestWithParam<bool> {};

TEST_P(ProviderRemoteScan, ARemoteOnlyClaimIsFetchedByTheWholePathAndCommittedByTheLocalPart) {
  ControllerOptions co;
  co.full_scan = GetParam();
  RemoteFixture f("tempokv", co);
  ASSERT_TRUE(f.controller->report(1, manifest({kRemoteObj}), milliseconds(1000)).is_ok());
  ASSERT_TRUE(f.controller->update({}, std::vector<ClaimId>{1}).is_ok());
  const Duration whole = milliseconds(135) + kStoreWrite + kRead;
  // The first stage: the fetch starts at use - TTR of the whole path, and holds no room.
  f.stack.ex.run_until(f.at(milliseconds(1000) - whole - Duration(1)));
  EXPECT_EQ(f.remote.fetches, 0);
  f.stack.ex.run_until(f.at(milliseconds(1000) - whole));
  ASSERT_EQ(f.remote.fetches, 1);
  EXPECT_EQ(f.since(f.remote.started_at[0]), milliseconds(1000) - whole);
  EXPECT_EQ(f.info(1).state, ClaimState::kPlanned);
  EXPECT_EQ(f.held_bytes(), 0u);
  EXPECT_EQ(f.controller->stats().prefetches, 1u);
  EXPECT_EQ(f.stack.provider->stats().remote_prefetches, 1u);
  // Its TTR now leaves the fetch out: the store's write and the read.
  EXPECT_EQ(f.stack.provider->ttr(testing::claim_of(1, {kRemoteObj})), kStoreWrite + kRead);
  EXPECT_TRUE(f.stack.provider->check_invariants().is_ok());
  // Eligible by the local part's laxity at use - (write + read), it waits for the fetch to land
  // (its read could not start earlier): nothing held through the fetch.
  f.stack.ex.run_until(f.at(milliseconds(1000) - kRead - Duration(1)));
  EXPECT_EQ(f.info(1).state, ClaimState::kPlanned);
  EXPECT_EQ(f.held_bytes(), 0u);
  EXPECT_EQ(f.controller->stats().fetch_waits, 1u);
  f.stack.ex.at(f.at(milliseconds(1000)), [&] {
    EXPECT_TRUE(f.controller->update({}, std::vector<ClaimId>{}).is_ok());
    f.retrieve(1, milliseconds(10));
  });
  f.stack.ex.run();
  const ClaimInfo i = f.info(1);
  // The second stage: the commit once the object is in the store, at use - read (its fetch and
  // the store's write took what TTR projected), ready at its use.
  EXPECT_EQ(f.since(i.timeline.committed), milliseconds(1000) - kRead);
  EXPECT_EQ(i.ttr_at_commit, kRead);
  EXPECT_EQ(f.since(i.timeline.ready), milliseconds(1000));
  EXPECT_FALSE(i.ordinary);
  EXPECT_TRUE(i.failure.is_ok()) << i.failure.to_string();
  EXPECT_EQ(f.remote.fetches, 1);
  EXPECT_TRUE(f.stack.store->contains(obj(kRemoteObj)));
  EXPECT_EQ(f.held_bytes(), 0u);
  EXPECT_EQ(f.stack.provider->stats().remote_fetching, 0u);
  EXPECT_TRUE(f.stack.provider->check_invariants().is_ok());
}

TEST_P(ProviderRemoteScan, WithoutPrefetchARemoteClaimCommitsAtUseLessItsWholeTtr) {
  ControllerOptions co;
  co.full_scan = GetParam();
  co.remote_prefetch = false;
  RemoteFixture f("tempokv", co);
  const ClaimInfo i = f.run_claim(1, {kRemoteObj}, milliseconds(1000));
  const Duration ttr = milliseconds(135) + kStoreWrite + kRead;
  EXPECT_EQ(f.since(i.timeline.committed), milliseconds(1000) - ttr);
  EXPECT_EQ(i.ttr_at_commit, ttr);
  EXPECT_FALSE(i.ordinary);
  EXPECT_TRUE(i.failure.is_ok()) << i.failure.to_string();
  // The fetch ran as its staging after the commit: the object is in the store now and the claim
  // was ready by its use (the fetch, the store's put and the read took what TTR projected).
  EXPECT_EQ(f.remote.fetches, 1);
  EXPECT_EQ(f.since(f.remote.started_at[0]), milliseconds(1000) - ttr);
  EXPECT_EQ(f.controller->stats().prefetches, 0u);
  EXPECT_TRUE(f.stack.store->contains(obj(kRemoteObj)));
  EXPECT_EQ(f.since(i.timeline.ready), milliseconds(1000));  // the projection is exact here
  EXPECT_EQ(f.held_bytes(), 0u);
  EXPECT_TRUE(f.stack.provider->check_invariants().is_ok());
}

TEST_P(ProviderRemoteScan, ASlowerNodeStartsTheFetchEarlierAndTheCommitStaysAtTheRead) {
  ControllerOptions co;
  co.full_scan = GetParam();
  RemoteFixture f("tempokv", co);
  f.remote.bytes_per_s = 0.25 * kRate;  // 10 + 250 ms for one object
  const ClaimInfo i = f.run_claim(1, {kRemoteObj}, milliseconds(1000));
  ASSERT_EQ(f.remote.fetches, 1);
  EXPECT_EQ(f.since(f.remote.started_at[0]),
            milliseconds(1000) - (milliseconds(260) + kStoreWrite + kRead));
  EXPECT_EQ(f.since(i.timeline.committed), milliseconds(1000) - kRead);
  EXPECT_EQ(f.since(i.timeline.ready), milliseconds(1000));  // the projection is exact here
}

TEST_P(ProviderRemoteScan, AFetchLaterThanProjectedHoldsNoRoomUntilItLands) {
  ControllerOptions co;
  co.full_scan = GetParam();
  RemoteFixture f("tempokv", co);
  f.remote.slow_by = milliseconds(30);  // unseen by its TTR
  ASSERT_TRUE(f.controller->report(1, manifest({kRemoteObj}), milliseconds(1000)).is_ok());
  ASSERT_TRUE(f.controller->update({}, std::vector<ClaimId>{1}).is_ok());
  // Eligible by the local part's laxity at use - (write + read), 30 ms before the fetch lands:
  // it holds nothing until then, and commits as the object is in the store.
  const Duration landed = milliseconds(1000) - kRead + milliseconds(30);
  f.stack.ex.run_until(f.at(landed - Duration(1)));
  EXPECT_EQ(f.info(1).state, ClaimState::kPlanned);
  EXPECT_EQ(f.held_bytes(), 0u);
  f.stack.ex.run_until(f.at(landed));
  EXPECT_EQ(f.info(1).state, ClaimState::kStaging);
  EXPECT_EQ(f.since(*f.info(1).timeline.committed), landed);
  EXPECT_EQ(f.held_bytes(), kObj);
  f.stack.ex.at(f.at(milliseconds(1000)), [&] {
    EXPECT_TRUE(f.controller->update({}, std::vector<ClaimId>{}).is_ok());
    f.retrieve(1, milliseconds(10));
  });
  f.stack.ex.run();
  const ClaimInfo i = f.info(1);
  EXPECT_EQ(f.since(i.timeline.ready), milliseconds(1030));  // as late as the fetch, no later
  EXPECT_TRUE(i.failure.is_ok()) << i.failure.to_string();
  EXPECT_EQ(f.held_bytes(), 0u);
  EXPECT_TRUE(f.stack.provider->check_invariants().is_ok());
  // Without the second stage's wait the room is held from the whole path's laxity on.
  ControllerOptions off = co;
  off.remote_prefetch = false;
  RemoteFixture g("tempokv", off);
  g.remote.slow_by = milliseconds(30);
  const ClaimInfo j = g.run_claim(1, {kRemoteObj}, milliseconds(1000));
  EXPECT_EQ(g.since(j.timeline.committed),
            milliseconds(1000) - (milliseconds(135) + kStoreWrite + kRead));
  EXPECT_EQ(g.since(j.timeline.ready), milliseconds(1030));
}

INSTANTIATE_TEST_SUITE_P(IndexedAndFullScan, ProviderRemoteScan, ::testing::Bool());

TEST(ProviderRemote, ALocalClaimOfTheSameSizeCommitsAtUseLessTheReadAlone) {
  RemoteFixture f("tempokv");
  const ClaimInfo i = f.run_claim(1, {1}, milliseconds(1000));
  EXPECT_EQ(f.since(i.timeline.committed), milliseconds(1000) - kRead);
  EXPECT_EQ(f.remote.fetches, 0);
}

TEST(ProviderRemote, ImmediateCommitsARemoteClaimAtReportAndDemandAtUse) {
  RemoteFixture immediate("immediate");
  ClaimInfo i = immediate.run_claim(1, {kRemoteObj}, milliseconds(1000));
  EXPECT_EQ(immediate.since(i.timeline.committed), Duration::zero());
  EXPECT_EQ(immediate.since(i.timeline.ready), milliseconds(135) + kStoreWrite + kRead);
  RemoteFixture demand("demand");
  i = demand.run_claim(1, {kRemoteObj}, milliseconds(1000));
  EXPECT_EQ(demand.since(i.timeline.committed), milliseconds(1000));
  EXPECT_EQ(demand.since(i.timeline.ready),
            milliseconds(1000) + milliseconds(135) + kStoreWrite + kRead);
  EXPECT_FALSE(i.ordinary);
}

TEST(ProviderRemote, AFetchThatFailsAfterTheCommitFailsTheClaimAndGivesItsProtectionBack) {
  RemoteFixture f("immediate");
  f.remote.fail_with = Status::not_found("remote fetch of it: a miss (checksum)");
  ASSERT_TRUE(f.controller->report(1, manifest({kRemoteObj, 2}), milliseconds(1000)).is_ok());
  ASSERT_TRUE(f.controller->update({}, std::vector<ClaimId>{1}).is_ok());
  EXPECT_EQ(f.info(1).state, ClaimState::kStaging);
  EXPECT_EQ(f.held_bytes(), 2 * kObj);  // reserved for the fetch and the read from the commit
  f.stack.ex.run_until(f.at(milliseconds(500)));
  const ClaimInfo i = f.info(1);
  EXPECT_EQ(i.state, ClaimState::kReleased);
  EXPECT_EQ(i.failure.code(), StatusCode::kNotFound);
  EXPECT_NE(i.failure.message().find("checksum"), std::string::npos) << i.failure.to_string();
  EXPECT_EQ(f.held_bytes(), 0u);
  EXPECT_FALSE(f.stack.store->contains(obj(kRemoteObj)));  // nothing unverified was stored
  EXPECT_EQ(f.stack.provider->stats().remote_fetch_errors, 1u);
  EXPECT_EQ(f.stack.provider->stats().remote_fetching, 0u);
  EXPECT_TRUE(f.stack.provider->check_invariants().is_ok());
}

TEST(ProviderRemote, AClaimNeedingANodeHeldUnhealthyIsRefusedAtItsCommit) {
  RemoteFixture f("immediate");
  f.remote.unhealthy = true;
  auto r = f.stack.commit(testing::claim_of(1, {kRemoteObj}));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);  // a load error, not a daemon down
  EXPECT_NE(r.status().message().find("held unhealthy"), std::string::npos);
  EXPECT_EQ(f.held_bytes(), 0u);
  EXPECT_EQ(f.remote.fetches, 0);
  EXPECT_EQ(f.stack.provider->stats().remote_refusals, 1u);
}

TEST(ProviderRemote, APrefetchThatFailsIsAMissFetchedOnceAndTheCommitFailsOnIt) {
  RemoteFixture f("tempokv");
  f.remote.fail_with = Status::not_found("remote fetch of it: a miss (checksum)");
  f.remote.fail_after = milliseconds(20);
  ASSERT_TRUE(f.controller->report(1, manifest({kRemoteObj}), milliseconds(1000)).is_ok());
  ASSERT_TRUE(f.controller->update({}, std::vector<ClaimId>{1}).is_ok());
  const Duration whole = milliseconds(135) + kStoreWrite + kRead;
  f.stack.ex.run_until(f.at(milliseconds(1000) - whole + milliseconds(19)));
  EXPECT_EQ(f.remote.fetches, 1);
  EXPECT_EQ(f.info(1).state, ClaimState::kPlanned);
  EXPECT_EQ(f.held_bytes(), 0u);
  EXPECT_TRUE(f.stack.provider->check_invariants().is_ok());
  // The prefetch fails 20 ms after it started; the claim's whole laxity is below zero, so the
  // evaluation its end brings tries the commit, which fails on the fetch's error without fetching
  // again: the engine recomputes, nothing was held, nothing unverified is stored.
  f.stack.ex.run_until(f.at(milliseconds(1000) - whole + milliseconds(20)));
  EXPECT_EQ(f.stack.provider->stats().remote_prefetch_errors, 1u);
  const ClaimInfo i = f.info(1);
  EXPECT_EQ(i.state, ClaimState::kReleased);
  EXPECT_EQ(i.failure.code(), StatusCode::kNotFound);
  EXPECT_NE(i.failure.message().find("checksum"), std::string::npos) << i.failure.to_string();
  EXPECT_NE(i.failure.message().find("before its commit"), std::string::npos);
  EXPECT_EQ(f.controller->stats().commits, 0u);
  f.stack.ex.run();
  EXPECT_EQ(f.remote.fetches, 1);
  EXPECT_EQ(f.held_bytes(), 0u);
  EXPECT_FALSE(f.stack.store->contains(obj(kRemoteObj)));
  EXPECT_EQ(f.stack.provider->stats().remote_fetch_errors, 1u);
  EXPECT_TRUE(f.stack.provider->check_invariants().is_ok());
  // Another claim fetches it afresh (a replica may serve it by then).
  f.remote.fail_with = Status::ok();
  ASSERT_TRUE(f.stack.commit(testing::claim_of(2, {kRemoteObj})).is_ok());
  f.stack.ex.run();
  EXPECT_EQ(f.remote.fetches, 2);
  EXPECT_TRUE(f.stack.ready.at(2).second.is_ok());
}

TEST(ProviderRemote, APrefetchOutlivesNoInterestAndACommitJoinsIt) {
  RemoteFixture f("tempokv");
  // Two claims on one object: the first starts its fetch, the second (used later) joins it by
  // its commit and is never fetched twice; the object lands once.
  auto p = f.stack.provider->prefetch(testing::claim_of(1, {kRemoteObj}));
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(*p, 1u);
  p = f.stack.provider->prefetch(testing::claim_of(2, {kRemoteObj}));
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(*p, 0u);  // already being fetched: the cue to commit
  EXPECT_EQ(f.held_bytes(), 0u);
  ASSERT_TRUE(f.stack.commit(testing::claim_of(2, {kRemoteObj})).is_ok());
  EXPECT_EQ(f.held_bytes(), kObj);
  EXPECT_EQ(f.remote.fetches, 1);
  ASSERT_TRUE(f.stack.provider->cancel(2).is_ok());  // its fetch stays in flight, tracked
  EXPECT_EQ(f.held_bytes(), 0u);
  EXPECT_EQ(f.stack.provider->stats().remote_fetching, 1u);
  EXPECT_TRUE(f.stack.provider->check_invariants().is_ok());
  ASSERT_TRUE(f.stack.commit(testing::claim_of(3, {kRemoteObj})).is_ok());
  EXPECT_EQ(f.remote.fetches, 1);  // joined, not fetched again
  f.stack.ex.run();
  EXPECT_TRUE(f.stack.ready.at(3).second.is_ok());
  EXPECT_TRUE(f.stack.store->contains(obj(kRemoteObj)));
  EXPECT_EQ(f.stack.provider->stats().remote_fetching, 0u);
  EXPECT_EQ(f.remote.fetches, 1);
  EXPECT_TRUE(f.stack.provider->check_invariants().is_ok());
  // Without a source, nothing to fetch ahead.
  f.stack.provider->set_remote_source(nullptr);
  p = f.stack.provider->prefetch(testing::claim_of(4, {kRemoteObj + 1}));
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(*p, 0u);
  f.stack.provider->set_remote_source(&f.remote);
  // A node held unhealthy refuses the first stage as it refuses the commit.
  f.remote.unhealthy = true;
  p = f.stack.provider->prefetch(testing::claim_of(5, {kRemoteObj + 1}));
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
}

TEST(ProviderRemote, ClaimsOnOneRemoteObjectShareItsFetchAndACancelledOneLetsItGo) {
  RemoteFixture f("immediate");
  ASSERT_TRUE(f.stack.commit(testing::claim_of(1, {kRemoteObj})).is_ok());
  ASSERT_TRUE(f.stack.commit(testing::claim_of(2, {kRemoteObj})).is_ok());
  ASSERT_TRUE(f.stack.commit(testing::claim_of(3, {kRemoteObj + 1})).is_ok());
  EXPECT_EQ(f.remote.fetches, 2);
  EXPECT_EQ(f.stack.provider->stats().remote_fetching, 2u);
  EXPECT_EQ(f.held_bytes(), 2 * kObj);
  EXPECT_TRUE(f.stack.provider->check_invariants().is_ok());
  ASSERT_TRUE(f.stack.provider->cancel(3).is_ok());  // mid-fetch: its reservation ends now
  EXPECT_EQ(f.held_bytes(), kObj);
  EXPECT_TRUE(f.stack.provider->check_invariants().is_ok());
  f.stack.ex.run();
  EXPECT_TRUE(f.stack.ready.at(1).second.is_ok());
  EXPECT_TRUE(f.stack.ready.at(2).second.is_ok());
  EXPECT_EQ(f.stack.ready.count(3), 0u);
  EXPECT_EQ(*f.stack.provider->phase(1), ClaimPhase::kStageReady);
  EXPECT_TRUE(f.stack.store->contains(obj(kRemoteObj + 1)));  // landed as cache
  EXPECT_EQ(f.stack.provider->stats().remote_fetching, 0u);
  EXPECT_TRUE(f.stack.provider->check_invariants().is_ok());
}

TEST(ProviderRemote, TheOrdinaryPathAndAProviderWithoutASourceRefuseRemoteObjects) {
  RemoteFixture f("demand");
  auto o = f.stack.ordinary(testing::claim_of(1, {kRemoteObj}));
  ASSERT_FALSE(o.is_ok());
  EXPECT_EQ(o.status().code(), StatusCode::kNotFound);
  f.stack.provider->set_remote_source(nullptr);
  auto c = f.stack.commit(testing::claim_of(2, {kRemoteObj}));
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(f.stack.provider->ttr(testing::claim_of(2, {kRemoteObj})), kRead);
  f.stack.provider->set_remote_source(&f.remote);
}

}  // namespace
}  // namespace tempokv
