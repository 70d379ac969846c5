// Claims on objects only a remote tier holds (remote_source.h), in simulated time: the provider
// holds them, their TTR adds the remote part and the store's write, the controller's laxity rule
// commits them at exactly use - TTR, and the fetch is their staging after the commit. A fetch
// that fails after the commit fails the claim and gives its protection back.
//
// Numbers: the simulated stack of sim_fixture.h (64 MiB objects read in 62.5 ms alone), its SSD
// writing at 4 GiB/s with write_cost 0.25 (the store's write of one object's record, 64 MiB and a
// 4 KiB header: 15.625954 ms, rounded to the nanosecond), and a remote node of 10 ms latency at
// 0.5 GiB/s (one object: 135 ms). TTR of one remote object alone: 135 + 15.625954 + 62.5 =
// 213.125954 ms.
#include <gtest/gtest.h>

#include <set>

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
    const Duration took = time_for(payload_bytes);
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
  int fetches = 0;

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

TEST_P(ProviderRemoteScan, ARemoteOnlyClaimCommitsAtUseLessItsTtrWithTheRemotePart) {
  ControllerOptions co;
  co.full_scan = GetParam();
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
  EXPECT_TRUE(f.stack.store->contains(obj(kRemoteObj)));
  EXPECT_EQ(f.since(i.timeline.ready), milliseconds(1000));  // the projection is exact here
  EXPECT_EQ(f.held_bytes(), 0u);
  EXPECT_TRUE(f.stack.provider->check_invariants().is_ok());
}

TEST_P(ProviderRemoteScan, ASlowerNodeCommitsTheClaimEarlier) {
  ControllerOptions co;
  co.full_scan = GetParam();
  RemoteFixture f("tempokv", co);
  f.remote.bytes_per_s = 0.25 * kRate;  // 10 + 250 ms for one object
  const ClaimInfo i = f.run_claim(1, {kRemoteObj}, milliseconds(1000));
  EXPECT_EQ(f.since(i.timeline.committed),
            milliseconds(1000) - (milliseconds(260) + kStoreWrite + kRead));
  EXPECT_EQ(f.since(i.timeline.ready), milliseconds(1000));  // the projection is exact here
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
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("held unhealthy"), std::string::npos);
  EXPECT_EQ(f.held_bytes(), 0u);
  EXPECT_EQ(f.remote.fetches, 0);
  EXPECT_EQ(f.stack.provider->stats().remote_refusals, 1u);
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
