// Node failures against a real Redis Cluster: a stopped node (SIGSTOP) and a killed master
// (kill -9) during fetches. Every fetch ends within a bounded time and none returns wrong bytes.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "remote/cluster_fixture.h"

namespace tempokv::remote {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

RemoteIdentity identity(uint64_t hash) {
  RemoteIdentity id;
  id.key = Key{88, hash};
  id.generation = 1;
  return id;
}

// Keys owned by one master, put and acknowledged by its replica (WAIT).
std::vector<uint64_t> keys_on(RemoteClient& c, const std::string& master, size_t count,
                              size_t bytes) {
  std::vector<uint64_t> out;
  for (uint64_t h = 1; out.size() < count; ++h) {
    if (c.owner_of(object_key(Key{88, h})) != master) continue;
    EXPECT_TRUE(c.put(identity(h), pattern(bytes, h)).is_ok());
    out.push_back(h);
  }
  auto w = c.command(object_key(Key{88, out[0]}), {"WAIT", "1", "2000"});
  EXPECT_TRUE(w.is_ok() && w.value().text == "1") << "the replica did not acknowledge";
  return out;
}

TEST(RemoteClusterFailure, AStoppedNodeFailsTheFetchAtItsDeadline) {
  RemoteClient c(cluster().config());
  ASSERT_TRUE(c.connect().is_ok());
  const std::string master = c.masters()[0];
  const size_t bytes = 1 << 20;
  const auto keys = keys_on(c, master, 1, bytes);
  std::vector<unsigned char> dst(bytes);
  ASSERT_TRUE(c.fetch({Key{88, keys[0]}}, dst).hit());

  const int pid = cluster().pid_of(master);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  const auto start = Clock::now();
  FetchResult r = c.fetch({Key{88, keys[0]}}, dst);
  const auto took = Clock::now() - start;
  ::kill(pid, SIGCONT);  // well within cluster-node-timeout: no failover
  EXPECT_EQ(r.outcome, FetchOutcome::kUnavailable) << r.detail;
  EXPECT_LT(took, milliseconds(500) * 3) << "a call must end near its deadline";
  bool unhealthy = false;
  for (const auto& n : c.node_stats()) {
    if (n.address == master) unhealthy = !n.healthy && n.failures == 1;
  }
  EXPECT_TRUE(unhealthy);

  r = c.fetch({Key{88, keys[0]}}, dst);
  EXPECT_EQ(r.outcome, FetchOutcome::kHit) << r.detail;
  EXPECT_TRUE(std::ranges::equal(dst, pattern(bytes, keys[0])));
}

// The master dies; fetches fail (bounded) until the cluster promotes the replica, which then
// serves the same bytes. No fetch ever returns other bytes than those put.
TEST(RemoteClusterFailure, AKilledMasterFailsOverToItsReplicaWithNoWrongBytes) {
  RemoteClient c(cluster().config());
  ASSERT_TRUE(c.connect().is_ok());
  const std::string master = c.masters()[1];
  const size_t bytes = 4 << 20;
  const auto keys = keys_on(c, master, 4, bytes);
  std::vector<unsigned char> dst(bytes);

  const int pid = cluster().pid_of(master);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  const auto start = Clock::now();
  size_t unavailable = 0, hits_after = 0;
  auto slowest = Clock::duration::zero();
  for (size_t i = 0; Clock::now() - start < std::chrono::seconds(20) && hits_after < 8; ++i) {
    const uint64_t h = keys[i % keys.size()];
    std::fill(dst.begin(), dst.end(), 0);
    const auto t0 = Clock::now();
    FetchResult r = c.fetch({Key{88, h}}, dst);
    slowest = std::max(slowest, Clock::now() - t0);
    if (r.hit()) {
      ASSERT_TRUE(std::ranges::equal(dst, pattern(bytes, h))) << "wrong bytes for key " << h;
      ++hits_after;
    } else {
      ASSERT_EQ(r.outcome, FetchOutcome::kUnavailable) << r.detail;
      ++unavailable;
      std::this_thread::sleep_for(milliseconds(50));
    }
  }
  EXPECT_GT(unavailable, 0u);
  EXPECT_EQ(hits_after, 8u) << "the replica never took over";
  EXPECT_NE(c.owner_of(object_key(Key{88, keys[0]})), master);
  // Connect and I/O deadlines, plus one slot-map refresh that may try the dead node.
  EXPECT_LT(slowest, milliseconds(200 + 500) * 3);
  cluster().restart(master);  // it rejoins as a replica
}

}  // namespace
}  // namespace tempokv::remote
