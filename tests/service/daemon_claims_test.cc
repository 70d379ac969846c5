// Claims that end in a real tempokvd: a cancel after begin_transfer and a copier killed mid-copy
// give the protection back; a cancel by one rank reaches a rank still copying; a re-put (of the
// same bytes, of others, after a reclamation) never serves stale bytes; progressive release and
// the tensor-parallel rule count distinct copying sessions.
#include <gtest/gtest.h>

#include <cstring>

#include "service/daemon_fixture.h"

namespace tempokv::testing {
namespace {

// No claim holds anything: nothing protected or reserved, no live claim in any state.
bool nothing_held(ServiceClient& c) {
  auto s = c.stats();
  if (!s.is_ok()) return false;
  double live = 0;
  for (const char* state : {"planned", "staging", "stage_ready", "transferring", "ordinary"})
    live += stat(*s, std::string("claims_") + state);
  return stat(*s, "tier_protected_bytes") == 0 && stat(*s, "tier_reserved_bytes") == 0 &&
         live == 0;
}

std::unique_ptr<ServiceClient> connect_rank(const DaemonProcess& d, const char* name,
                                            uint32_t ranks) {
  ClientOptions o;
  o.endpoint = d.endpoint();
  o.name = name;
  o.runtime = "tp-engine";
  o.ranks = ranks;
  o.call_timeout = std::chrono::seconds(5);
  auto c = ServiceClient::connect(o);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return c.is_ok() ? std::move(c).value() : nullptr;
}

// Asks for a claim another session of the runtime added, and waits until it is ready.
void join(ServiceClient& c, uint64_t id) {
  bool ready = false;
  auto answer = c.request_retrieval(id, [&](ClaimId, Result<RetrievalPath>) { ready = true; });
  ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
  if (*answer == RetrievalAnswer::kWait) {
    ASSERT_TRUE(DaemonTest::wait_for(c, [&] { return ready; }));
  }
}

TEST_F(DaemonTest, CancelAfterBeginTransferGivesTheProtectionBackAndTheIdIsReusable) {
  auto c = client();
  ASSERT_TRUE(c);
  auto m = put_objects(*c, 500, 3);
  stage(*c, 7, m);
  ASSERT_TRUE(c->begin_transfer(7).is_ok());
  EXPECT_EQ(stat_of(*c, "claims_transferring"), 1);
  ASSERT_TRUE(c->cancel(7).is_ok());  // the only copier stops: nothing can read the bytes now
  EXPECT_TRUE(nothing_held(*c)) << "protected " << stat_of(*c, "tier_protected_bytes");
  EXPECT_EQ(stat_of(*c, "claims_cancelled_total"), 1);
  // The request id is free again.
  stage(*c, 7, m);
  expect_bytes(*c, 7, m);
  ASSERT_TRUE(c->begin_transfer(7).is_ok());
  ASSERT_TRUE(c->end_transfer(7).is_ok());
  EXPECT_TRUE(nothing_held(*c));
}

TEST_F(DaemonTest, ACancelByOneRankReachesARankStillCopying) {
  auto rank0 = connect_rank(*daemon_, "rank0", 2);
  auto rank1 = connect_rank(*daemon_, "rank1", 2);
  ASSERT_TRUE(rank0 && rank1);
  auto m = put_objects(*rank0, 520, 2);
  stage(*rank0, 9, m);
  join(*rank1, 9);
  ASSERT_TRUE(rank0->begin_transfer(9).is_ok());
  ASSERT_TRUE(rank1->begin_transfer(9).is_ok());
  ASSERT_TRUE(rank0->cancel(9).is_ok());
  // Rank 1 may still be reading the bytes: they stay protected, and it is told to stop.
  EXPECT_GT(stat_of(*rank0, "tier_protected_bytes"), 0);
  EXPECT_EQ(stat_of(*rank0, "claims_transferring"), 1);
  ASSERT_TRUE(wait_for(*rank1, [&] {
    return rank1->objects(9).status().code() == StatusCode::kCancelled;
  }));
  ASSERT_TRUE(rank1->end_transfer(9).is_ok());
  EXPECT_TRUE(nothing_held(*rank0));
  // The id is free again for the runtime.
  stage(*rank0, 9, m);
  EXPECT_TRUE(rank0->cancel(9).is_ok());
  EXPECT_TRUE(nothing_held(*rank0));
}

TEST_F(DaemonTest, ACopierKilledMidCopyGivesTheProtectionBack) {
  auto m = put_and_leave(540, 4);
  // The child's runtime stages a claim, begins copying it and dies without a word.
  in_killed_child([&](ServiceClient& c) {
    bool ready = false;
    if (!c.add_request({5, 4096, 1024, 4 * kObject, 16}).is_ok()) return 3;
    if (!c.report_hit(5, m).is_ok()) return 4;
    auto answer = c.request_retrieval(5, [&](ClaimId, Result<RetrievalPath>) { ready = true; });
    if (!answer.is_ok()) return 5;
    if (*answer == RetrievalAnswer::kWait && !wait_for(c, [&] { return ready; })) return 6;
    return c.begin_transfer(5).is_ok() ? 0 : 7;
  });
  auto c = client();
  ASSERT_TRUE(c);
  EXPECT_TRUE(wait_for(*c, [&] { return nothing_held(*c) && stat_of(*c, "sessions") == 1; }))
      << "protected " << stat_of(*c, "tier_protected_bytes") << ", transferring "
      << stat_of(*c, "claims_transferring");
}

TEST_F(DaemonTest, ADeadRankDoesNotHoldAClaimWhileASchedulerThatNeverCopiesLives) {
  // Ranks 2: a scheduler session that asks for retrieval but never copies, and two workers.
  auto scheduler = connect_rank(*daemon_, "scheduler", 2);
  auto worker0 = connect_rank(*daemon_, "worker0", 2);
  ASSERT_TRUE(scheduler && worker0);
  auto m = put_objects(*scheduler, 560, 2);
  // Both workers copy a first claim, so each is known to copy.
  {
    auto worker1 = connect_rank(*daemon_, "worker1", 2);
    ASSERT_TRUE(worker1);
    stage(*scheduler, 1, m);
    for (ServiceClient* w : {worker0.get(), worker1.get()}) {
      join(*w, 1);
      ASSERT_TRUE(w->begin_transfer(1).is_ok());
      ASSERT_TRUE(w->end_transfer(1).is_ok());
    }
    EXPECT_TRUE(nothing_held(*scheduler)) << "the scheduler, which never copies, held claim 1";
    stage(*scheduler, 2, m);
    join(*worker1, 2);
    ASSERT_TRUE(worker1->begin_transfer(2).is_ok());
  }  // worker 1 dies mid-copy: its socket closes without a word (as when its process is killed)
  ASSERT_TRUE(wait_for(*worker0, [&] { return stat_of(*worker0, "sessions") == 2; }));
  join(*worker0, 2);
  ASSERT_TRUE(worker0->begin_transfer(2).is_ok());
  ASSERT_TRUE(worker0->end_transfer(2).is_ok());
  EXPECT_TRUE(nothing_held(*scheduler)) << "a dead rank held claim 2 while the scheduler lived";
}

// The tier copy's bytes at a ready claim's spans equal `want`, and carry one generation.
void expect_served(ServiceClient& c, uint64_t id, const std::vector<std::byte>& want,
                   uint64_t* generation = nullptr) {
  auto spans = c.objects(id);
  ASSERT_TRUE(spans.is_ok()) << spans.status().to_string();
  ASSERT_EQ(spans->size(), 1u);
  const service::TierSpan& t = (*spans)[0];
  ASSERT_EQ(t.bytes, want.size());
  ASSERT_LE(t.offset + t.bytes, c.tier_bytes());
  EXPECT_NE(t.generation, 0u) << "a span without the generation of its bytes";
  EXPECT_EQ(std::memcmp(c.tier_data() + t.offset, want.data(), want.size()), 0)
      << "the claim was served other bytes than the key's";
  if (generation) *generation = t.generation;
}

TEST_F(DaemonTest, ARePutOfTheSameBytesSucceedsAndOtherBytesAreANewGeneration) {
  auto c = client();
  ASSERT_TRUE(c);
  auto m = put_objects(*c, 600, 1);
  stage(*c, 3, m);  // the object is now in the tier too
  uint64_t g1 = 0;
  expect_served(*c, 3, payload(600), &g1);
  ASSERT_TRUE(c->begin_transfer(3).is_ok());
  ASSERT_TRUE(c->end_transfer(3).is_ok());
  // A client that lost the reply retries: the same bytes are a success, nothing changes.
  ASSERT_TRUE(c->put(m[0].key, TokenRange{0, 256}, payload(600)).is_ok());
  EXPECT_EQ(stat_of(*c, "write_region_used_bytes"), 0);
  stage(*c, 4, m);
  uint64_t g = 0;
  expect_served(*c, 4, payload(600), &g);
  EXPECT_EQ(g, g1) << "an identical re-put changed the generation";
  ASSERT_TRUE(c->begin_transfer(4).is_ok());
  ASSERT_TRUE(c->end_transfer(4).is_ok());
  // Different bytes, and twice the length, under the same key: a new generation.
  auto other = payload(9999, 2 * kObject);
  ASSERT_TRUE(c->put(m[0].key, TokenRange{0, 256}, other).is_ok());
  std::vector<Key> keys{m[0].key};
  EXPECT_EQ(*c->lookup(keys), std::vector<uint64_t>{2 * kObject});
  // A claim with the old length is refused at commit; one with the new length is served the new
  // bytes, never the tier's copy of the old generation.
  ASSERT_TRUE(c->add_request({5, 2048, 256, kObject, 16}).is_ok());
  ASSERT_TRUE(c->report_hit(5, m).is_ok());
  EXPECT_FALSE(c->request_retrieval(5, nullptr).is_ok());
  ASSERT_TRUE(c->finished(5, 0).is_ok());
  stage(*c, 6, {{m[0].key, 2 * kObject}});
  expect_served(*c, 6, other, &g);
  EXPECT_GT(g, g1);
}

// A store of three 4 MiB segments: a few puts reclaim the oldest.
class SmallStoreDaemonTest : public DaemonTest {
 protected:
  std::vector<std::string> extra_args() const override {
    return {"--set", "store.segment_bytes=4MiB", "--set", "store.capacity_bytes=12MiB", "--set",
            "store.max_object_bytes=1MiB"};
  }
};

TEST_F(SmallStoreDaemonTest, ARePutAfterReclamationIsServedItsNewBytesNotTheTiersOldCopy) {
  auto c = client();
  ASSERT_TRUE(c);
  auto m = put_objects(*c, 700, 1);
  stage(*c, 3, m);
  expect_served(*c, 3, payload(700));
  ASSERT_TRUE(c->begin_transfer(3).is_ok());
  ASSERT_TRUE(c->end_transfer(3).is_ok());
  std::vector<Key> keys{m[0].key};
  for (uint64_t i = 800; (*c->lookup(keys))[0] != 0; ++i) {
    ASSERT_LT(i, 840u) << "the store never reclaimed the object";
    put_objects(*c, i, 1);
  }
  auto fresh = payload(4242);
  ASSERT_TRUE(c->put(m[0].key, TokenRange{0, 256}, fresh).is_ok());
  stage(*c, 4, m);
  expect_served(*c, 4, fresh);
}

class ProgressiveDaemonTest : public DaemonTest {
 protected:
  std::vector<std::string> extra_args() const override {
    return {"--set", "controller.policy=tempokv-progressive"};
  }
};

TEST_F(ProgressiveDaemonTest, AnObjectIsReleasedOnlyOnceEveryRankHasCopiedIt) {
  auto rank0 = connect_rank(*daemon_, "rank0", 2);
  auto rank1 = connect_rank(*daemon_, "rank1", 2);
  ASSERT_TRUE(rank0 && rank1);
  auto m = put_objects(*rank0, 700, 2);
  stage(*rank0, 8, m);
  ASSERT_TRUE(rank0->begin_transfer(8).is_ok());
  const double claim_bytes = stat_of(*rank0, "tier_protected_bytes");
  ASSERT_GT(claim_bytes, 0);
  // One rank alone, reporting the same object twice, is one copy of two.
  ASSERT_TRUE(rank0->object_transferred(8, m[0].key).is_ok());
  ASSERT_TRUE(rank0->object_transferred(8, m[0].key).is_ok());
  EXPECT_EQ(stat_of(*rank0, "tier_protected_bytes"), claim_bytes)
      << "object 0 unprotected before rank 1 copied it";
  join(*rank1, 8);
  expect_bytes(*rank1, 8, m);
  ASSERT_TRUE(rank1->begin_transfer(8).is_ok());
  ASSERT_TRUE(rank1->object_transferred(8, m[0].key).is_ok());
  EXPECT_EQ(stat_of(*rank0, "tier_protected_bytes"), claim_bytes / 2);
  ASSERT_TRUE(rank0->end_transfer(8).is_ok());
  ASSERT_TRUE(rank1->end_transfer(8).is_ok());
  EXPECT_TRUE(nothing_held(*rank0));
}

// Protocol v4: add_request carrying its hit is one round trip; a refused hit takes the request
// back, so it is added with its claim or not at all.
TEST_F(DaemonTest, ARequestAddedWithItsHitIsClaimedInOneCallOrNotAddedAtAll) {
  auto c = client();
  ASSERT_TRUE(c);
  auto m = put_objects(*c, 860, 2);
  const double calls = stat_of(*c, "requests_total");
  ASSERT_TRUE(c->add_request({1, 2048, 1024, 2 * kObject, 16}, m).is_ok());
  EXPECT_EQ(stat_of(*c, "requests_total") - calls, 2);  // the add and the stats call itself
  await_ready(*c, 1);
  expect_bytes(*c, 1, m);
  ASSERT_TRUE(c->begin_transfer(1).is_ok());
  ASSERT_TRUE(c->end_transfer(1).is_ok());
  // A manifest naming one object twice is refused, and request 2 with it.
  std::vector<ManifestEntry> twice = {m[0], m[0]};
  Status st = c->add_request({2, 2048, 1024, 2 * kObject, 16}, twice);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.message().find("listed twice"), std::string::npos) << st.to_string();
  EXPECT_EQ(runtime_stat(*c, "adapter_waiting_requests"), 0);
  EXPECT_EQ(c->report_hit(2, m).code(), StatusCode::kNotFound);
  // Its id is free: added again with a good hit, it is claimed.
  ASSERT_TRUE(c->add_request({2, 2048, 1024, 2 * kObject, 16}, m).is_ok());
  await_ready(*c, 2);
  expect_bytes(*c, 2, m);
}

}  // namespace
}  // namespace tempokv::testing
