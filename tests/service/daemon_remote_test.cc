// Two tempokvd processes sharing one real Redis Cluster (scripts/cluster, docs/cluster.md):
// a put on A is published write-behind; B's lookup finds it in the cluster, B's report_hit returns
// at once, and once B's provider commits the claim it fetches the object into B's store, verified,
// and stages it like any local object. A corrupted value or a master killed mid-fetch fails the
// claim's load (never KV, nothing left protected); publishes beyond the bound are dropped and
// counted while the engine's puts never wait on the cluster.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <optional>

#include "remote/cluster_fixture.h"
#include "remote/remote_client.h"
#include "service/daemon_fixture.h"
#include "service/daemon_process.h"

namespace tempokv::testing {
namespace {

using Clock = std::chrono::steady_clock;

// DaemonTest's helpers (stage, expect_bytes), with two daemons of its own instead of one.
class RemoteDaemons : public DaemonTest {
 protected:
  virtual std::vector<std::string> remote_args() const { return {}; }
  void SetUp() override {
    const auto& cluster = remote::cluster();
    std::string seeds;
    for (const std::string& s : cluster.seeds()) seeds += (seeds.empty() ? "" : ",") + s;
    base_ = ::testing::TempDir() + "tkvr-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(base_);
    std::filesystem::create_directories(base_);
    std::vector<std::string> args = {"--set", "remote.seeds=" + seeds, "--set",
                                     "remote.io_timeout_ms=500"};
    for (const std::string& a : remote_args()) args.push_back(a);
    for (const char* name : {"a", "b"}) {
      daemons_.push_back(std::make_unique<DaemonProcess>(base_ + "/" + name, args));
      ASSERT_TRUE(daemons_.back()->start()) << "tempokvd " << name << " did not start";
    }
  }
  void TearDown() override {
    for (auto& d : daemons_) EXPECT_EQ(d->stop(), 0) << "tempokvd did not stop cleanly";
    std::filesystem::remove_all(base_);
  }
  std::unique_ptr<ServiceClient> client(size_t daemon) {
    auto c = daemons_[daemon]->connect();
    EXPECT_TRUE(c.is_ok()) << c.status().to_string();
    return c.is_ok() ? std::move(c).value() : nullptr;
  }
  // Waits until stat `name` of c's daemon is at least `value`; false after 10 s.
  static bool wait_stat(ServiceClient& c, const std::string& name, double value) {
    for (int i = 0; i < 1000; ++i) {
      if (DaemonTest::stat_of(c, name) >= value) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  // Puts objects hash first..first+n-1 (model 1) on c; their manifest.
  static std::vector<ManifestEntry> put(ServiceClient& c, uint64_t first, int n) {
    std::vector<ManifestEntry> m;
    for (int i = 0; i < n; ++i) {
      const Key key{1, first + uint64_t(i)};
      Status st =
          c.put(key, TokenRange{uint32_t(i) * 256, uint32_t(i + 1) * 256}, payload(key.hash));
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      m.push_back({key, kObject});
    }
    return m;
  }
  // put(), then waits until the daemon has published all n.
  static std::vector<ManifestEntry> put_published(ServiceClient& c, uint64_t first, int n) {
    auto m = put(c, first, n);
    EXPECT_TRUE(wait_stat(c, "remote_published_total", n));
    return m;
  }
  // c's lookup, asked again (up to 5 times) when it timed out: on a loaded machine a first probe
  // of the cluster (its slot map included) may outlast the client's lookup_timeout (250 ms).
  static Result<std::vector<uint64_t>> lookup(ServiceClient& c, const std::vector<Key>& keys) {
    Result<std::vector<uint64_t>> r = c.lookup(keys);
    for (int i = 0; i < 4 && !r.is_ok(); ++i) r = c.lookup(keys);
    return r;
  }
  static std::vector<Key> keys_of(const std::vector<ManifestEntry>& m) {
    std::vector<Key> k;
    for (const auto& e : m) k.push_back(e.key);
    return k;
  }
  // The sum of a per-node stat over the nodes (its names end in _HOST:PORT).
  static double node_sum(ServiceClient& c, const std::string& name) {
    auto s = c.stats();
    double sum = 0;
    if (!s.is_ok()) return std::nan("");
    for (const auto& [n, v] : *s) {
      if (n.rfind(name + "_127.0.0.1:", 0) == 0) sum += v;
    }
    return sum;
  }

  // A reported request from order and admission to its retrieval: OK once its claim is ready,
  // else the load error the engine gets (its staging failed: the engine recomputes).
  static Status load(ServiceClient& c, uint64_t id) {
    EXPECT_TRUE(c.update_order(std::vector<uint64_t>{id}).is_ok());
    EXPECT_TRUE(c.admitted(id).is_ok());
    std::optional<Status> loaded;
    auto answer = c.request_retrieval(
        id, [&](ClaimId, Result<RetrievalPath> p) { loaded = p.status(); });
    if (!answer.is_ok()) return answer.status();
    if (*answer != RetrievalAnswer::kWait) return Status::ok();
    if (!DaemonTest::wait_for(c, [&] { return loaded.has_value(); })) {
      return Status::internal("claim " + std::to_string(id) + " never became ready");
    }
    return *loaded;
  }
  // Claims `entries` as request id on c: the report_hit's status, or when it is OK the load's;
  // a claim loaded has its bytes checked against what was put and is copied; the request is
  // finished either way.
  static Status claim_and_check(ServiceClient& c, uint64_t id,
                                const std::vector<ManifestEntry>& entries) {
    EXPECT_TRUE(c.add_request({id, 2048, 1024, entries.size() * kObject, 16}).is_ok());
    Status hit = c.report_hit(id, entries);
    if (hit.is_ok()) hit = load(c, id);
    if (hit.is_ok()) {
      expect_bytes(c, id, entries);
      EXPECT_TRUE(c.begin_transfer(id).is_ok());
      EXPECT_TRUE(c.end_transfer(id).is_ok());
    }
    EXPECT_TRUE(c.finished(id, 16).is_ok());
    return hit;
  }
  // A master of the cluster (masters()[index]), its redis-server's pid, and the objects of
  // first..first+n-1, put and published through c, that it holds.
  struct Master {
    std::string address;
    int pid = 0;
    std::vector<ManifestEntry> objects;
  };
  static Master master_with_objects(ServiceClient& c, size_t index, uint64_t first, int n) {
    remote::RemoteClient rc(remote::cluster().config());
    EXPECT_TRUE(rc.connect().is_ok());
    Master m;
    m.address = rc.masters().at(index);
    m.objects = owned_by(rc, m.address, put_published(c, first, n));
    m.pid = remote::cluster().pid_of(m.address);
    EXPECT_GT(m.pid, 0);
    return m;
  }
  // Waits until c's daemon has no publish queued; false after 10 s.
  static bool publishes_drained(ServiceClient& c) {
    for (int i = 0; i < 1000; ++i) {
      if (DaemonTest::stat_of(c, "remote_publish_queued_bytes") == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  // The entries of m whose objects the cluster keeps on `master`.
  static std::vector<ManifestEntry> owned_by(remote::RemoteClient& rc, const std::string& master,
                                             const std::vector<ManifestEntry>& m) {
    std::vector<ManifestEntry> out;
    for (const auto& e : m) {
      if (rc.owner_of(remote::object_key(e.key)) == master) out.push_back(e);
    }
    return out;
  }

  std::string base_;
  std::vector<std::unique_ptr<DaemonProcess>> daemons_;
};

TEST_F(RemoteDaemons, WhatAPutsIsStagedOnAnotherDaemonThroughTheCluster) {
  auto a = client(0);
  auto b = client(1);
  ASSERT_TRUE(a && b);
  const auto m = put_published(*a, 1000, 3);
  EXPECT_EQ(DaemonTest::stat_of(*a, "remote_puts_published_total"), 3);

  // B never saw these puts: its lookup finds them in the cluster, a claim can hold all three.
  auto sizes = lookup(*b, keys_of(m));
  ASSERT_TRUE(sizes.is_ok()) << sizes.status().to_string();
  EXPECT_EQ(*sizes, std::vector<uint64_t>(3, kObject));
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_lookup_objects_total"), 3);
  EXPECT_EQ(DaemonTest::stat_of(*b, "store_objects"), 0);

  // B's report_hit returns without fetching; the claim commits later (here at its retrieval),
  // fetches them into B's store as its staging, then stages them: the bytes A put.
  ASSERT_TRUE(b->add_request({7, 2048, 1024, m.size() * kObject, 16}).is_ok());
  ASSERT_TRUE(b->report_hit(7, m).is_ok());
  EXPECT_EQ(DaemonTest::stat_of(*b, "commits_total"), 0);
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_claim_fetches_total"), 0);
  EXPECT_EQ(DaemonTest::stat_of(*b, "store_objects"), 0);
  ASSERT_TRUE(load(*b, 7).is_ok());
  EXPECT_EQ(DaemonTest::stat_of(*b, "commits_total"), 1);
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_claim_fetches_total"), 3);
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_claim_fetching"), 0);
  DaemonTest::expect_bytes(*b, 7, m);
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_objects_stored_total"), 3);
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_fetches_total_hit"), 3);
  EXPECT_EQ(DaemonTest::stat_of(*b, "store_objects"), 3);
  EXPECT_EQ(node_sum(*b, "remote_node_fetches_total"), 3);
  EXPECT_EQ(node_sum(*b, "remote_node_fetch_bytes_total"), 3.0 * kObject);
  // Each fetch's remote TTR was projected (from the prior rate) and the fetch timed.
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_claims_timed_total"), 3);
  EXPECT_GT(DaemonTest::stat_of(*b, "remote_claim_ttr_projected_seconds_total"), 0);
  EXPECT_GT(DaemonTest::stat_of(*b, "remote_claim_fetch_seconds_total"), 0);
  EXPECT_EQ(node_sum(*b, "remote_node_bytes_in_flight"), 0);
  // The TTR model's learned wait is exported per node (its value is the loopback's: near 0).
  auto stats = b->stats();
  ASSERT_TRUE(stats.is_ok());
  EXPECT_TRUE(std::any_of(stats->begin(), stats->end(), [](const auto& nv) {
    return nv.first.rfind("remote_node_wait_seconds_127.0.0.1:", 0) == 0 && nv.second >= 0;
  }));
  // A local hit now: no more cluster traffic for them.
  ASSERT_TRUE(lookup(*b, keys_of(m)).is_ok());
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_lookups_total"), 1);
}

TEST_F(RemoteDaemons, ACorruptedValueIsAMissNeverKV) {
  auto a = client(0);
  auto b = client(1);
  ASSERT_TRUE(a && b);
  const auto m = put_published(*a, 2000, 2);
  // One payload byte of the second object changed in the cluster (its header still valid).
  remote::RemoteClient rc(remote::cluster().config());
  ASSERT_TRUE(rc.connect().is_ok());
  const std::string k = remote::object_key(m[1].key);
  auto r = rc.command(k, {"SETRANGE", k, std::to_string(remote::kHeaderBytes + 4096), "X"});
  ASSERT_TRUE(r.is_ok() && !r->error) << (r.is_ok() ? r->text : r.status().to_string());

  auto sizes = lookup(*b, keys_of(m));
  ASSERT_TRUE(sizes.is_ok());
  EXPECT_EQ(*sizes, std::vector<uint64_t>(2, kObject));  // headers are fine
  // The report_hit is taken; the claim's load fails (its fetch is its staging): the engine
  // recomputes, and nothing stays protected or reserved.
  Status hit = claim_and_check(*b, 9, m);
  EXPECT_EQ(hit.code(), StatusCode::kNotFound) << hit.to_string();
  EXPECT_NE(hit.message().find("checksum"), std::string::npos) << hit.to_string();
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_fetches_total_checksum"), 1);
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_claim_misses_total"), 1);
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_claim_fetch_errors_total"), 1);
  EXPECT_EQ(DaemonTest::stat_of(*b, "tier_protected_bytes"), 0);
  EXPECT_EQ(DaemonTest::stat_of(*b, "tier_reserved_bytes"), 0);
  // The good object was stored (as cache); the corrupted one never was.
  EXPECT_TRUE(wait_stat(*b, "remote_objects_stored_total", 1));
  EXPECT_EQ(DaemonTest::stat_of(*b, "store_objects"), 1);
  auto again = lookup(*b, std::vector<Key>{m[1].key});
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_objects_stored_total"), 1);
}

class RemoteBackpressure : public RemoteDaemons {
 protected:
  std::vector<std::string> remote_args() const override {
    return {"--set", "remote.write_behind_bytes=16MiB"};
  }
};

// Every master stopped (SIGSTOP): the publisher's put waits out its deadline, publishes beyond
// 16 MiB queued are dropped and counted, and the engine's puts never wait for any of it.
TEST_F(RemoteBackpressure, PublishesBeyondTheBoundAreDroppedAndPutsNeverWait) {
  auto a = client(0);
  ASSERT_TRUE(a);
  remote::RemoteClient rc(remote::cluster().config());
  ASSERT_TRUE(rc.connect().is_ok());
  std::vector<int> stopped;
  for (const std::string& master : rc.masters()) {
    stopped.push_back(remote::cluster().pid_of(master));
    ASSERT_EQ(::kill(stopped.back(), SIGSTOP), 0);
  }
  const Clock::time_point start = Clock::now();
  put(*a, 3000, 48);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double dropped = DaemonTest::stat_of(*a, "remote_publish_dropped_total");
  const double queued = DaemonTest::stat_of(*a, "remote_publish_queued_bytes");
  for (int pid : stopped) ::kill(pid, SIGCONT);
  // 48 puts of 1 MiB take the store's time, not a publish deadline (500 ms) each.
  EXPECT_LT(seconds, 10.0);
  // At most 16 MiB queued; a publish fails about once a second while the masters are stopped.
  EXPECT_LE(queued, 16.0 * kObject);
  EXPECT_GE(dropped, 48 - 16 - 2 * std::ceil(seconds) - 1);
  // Once the cluster answers again the queue drains; every publish is accounted for.
  EXPECT_TRUE(publishes_drained(*a));
  EXPECT_EQ(DaemonTest::stat_of(*a, "remote_published_total") +
                DaemonTest::stat_of(*a, "remote_publish_failed_total") +
                DaemonTest::stat_of(*a, "remote_publish_dropped_total"),
            48);
  EXPECT_GT(DaemonTest::stat_of(*a, "remote_published_total"), 0);
  EXPECT_EQ(DaemonTest::stat_of(*a, "store_objects"), 48);
}

// A stopped master (SIGSTOP): the claim's fetch fails at its deadline (remote.io_timeout_ms 500,
// a slot-map refresh that may ask the stopped node included) and the node is held unhealthy:
// the next claim on it is refused at once (its TTR has no finite value), not after another
// deadline. Once the node runs again and the hold (two deadlines) has passed, the same object
// is fetched and staged.
TEST_F(RemoteDaemons, AStoppedNodeFailsTheClaimWithinItsDeadlineThenAtOnce) {
  auto a = client(0);
  auto b = client(1);
  ASSERT_TRUE(a && b);
  const Master m = master_with_objects(*a, 0, 4000, 12);
  const std::string& master = m.address;
  const auto& on_master = m.objects;
  const int pid = m.pid;
  ASSERT_GE(on_master.size(), 2u);
  ASSERT_TRUE(lookup(*b, keys_of(on_master)).is_ok());  // B's probe learns the owner node
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  Clock::time_point start = Clock::now();
  Status hit = claim_and_check(*b, 31, {on_master[0]});
  const double first = std::chrono::duration<double>(Clock::now() - start).count();
  start = Clock::now();
  Status again = claim_and_check(*b, 32, {on_master[1]});
  const double second = std::chrono::duration<double>(Clock::now() - start).count();
  const double held = DaemonTest::stat_of(*b, "remote_node_held_unhealthy_" + master);
  ::kill(pid, SIGCONT);  // well within cluster-node-timeout: no failover
  EXPECT_EQ(hit.code(), StatusCode::kNotFound) << hit.to_string();
  EXPECT_NE(hit.message().find("unavailable"), std::string::npos) << hit.to_string();
  EXPECT_LT(first, 3 * (0.2 + 0.5));
  EXPECT_EQ(again.code(), StatusCode::kNotFound) << again.to_string();
  EXPECT_NE(again.message().find("held unhealthy"), std::string::npos) << again.to_string();
  EXPECT_LT(second, 0.5) << "refused without waiting for the node's deadline";
  EXPECT_EQ(held, 1);
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_claims_refused_unhealthy_total"), 1);
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_node_healthy_" + master), 0);
  EXPECT_EQ(DaemonTest::stat_of(*b, "tier_protected_bytes"), 0);

  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the hold: 2 x 500 ms
  EXPECT_TRUE(claim_and_check(*b, 33, {on_master[0]}).is_ok());
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_node_healthy_" + master), 1);
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_node_held_unhealthy_" + master), 0);
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_node_bytes_in_flight_" + master), 0);
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_claims_timed_total"), 1);
}

// tempokvd stopped (SIGTERM) while a claim's fetch waits on a stopped node: the daemon still
// stops cleanly (a fetched object's store put is waited for, a late one never put) and the
// engine's report_hit gets an error, never a hang.
TEST_F(RemoteDaemons, AShutdownDuringARemoteFetchStopsCleanly) {
  auto a = client(0);
  auto b = client(1);
  ASSERT_TRUE(a && b);
  const Master m = master_with_objects(*a, 2, 4500, 12);
  ASSERT_FALSE(m.objects.empty());
  ASSERT_TRUE(b->add_request({51, 2048, 1024, kObject, 16}).is_ok());
  ASSERT_EQ(::kill(m.pid, SIGSTOP), 0);
  Status hit;
  std::thread engine([&] {
    hit = b->report_hit(51, {m.objects[0]});
    if (hit.is_ok()) hit = load(*b, 51);  // commits it: the fetch waits on the stopped node
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const int stopped = daemons_[1]->stop();
  engine.join();
  ::kill(m.pid, SIGCONT);
  EXPECT_EQ(stopped, 0) << "tempokvd did not stop cleanly";
  EXPECT_FALSE(hit.is_ok());
  b.reset();
  ASSERT_TRUE(daemons_[1]->start());  // for TearDown, which stops it again
}

// A master killed (kill -9) while B's committed claim fetches from it (stopped first, so the
// fetch is in flight when it dies): the claim's load fails, what it reserved is given back and
// nothing is stored. Then claims fail (NotFound, never other bytes) until the cluster promotes
// its replica, which then serves the same bytes; every claim ends and no protection is left. The
// node is restarted and rejoins as a replica. Runs before the full cluster's test: a flood of
// writes can send a replica into a full resync.
TEST_F(RemoteDaemons, AKilledMasterFailsOverWithNoWrongBytesAndNothingHeld) {
  auto a = client(0);
  auto b = client(1);
  ASSERT_TRUE(a && b);
  const Master m = master_with_objects(*a, 1, 6000, 48);
  const std::string& master = m.address;
  const auto& on_master = m.objects;
  ASSERT_GE(on_master.size(), 6u);
  remote::RemoteClient rc(remote::cluster().config());
  ASSERT_TRUE(rc.connect().is_ok());
  // The replica has every write before its master dies (its offset caught up).
  bool caught_up = false;
  for (int i = 0; i < 1000 && !caught_up; ++i) {
    auto info = rc.command_at(master, {"INFO", "replication"});
    ASSERT_TRUE(info.is_ok());
    const std::string& t = info->text;
    const size_t at = t.find("master_repl_offset:");
    const size_t slave = t.find("offset=");
    caught_up = at != std::string::npos && slave != std::string::npos &&
                t.find("state=online") != std::string::npos &&
                std::stoull(t.substr(at + 19)) == std::stoull(t.substr(slave + 7));
    if (!caught_up) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(caught_up) << "the replica of " << master << " did not catch up";
  ASSERT_TRUE(lookup(*b, keys_of(on_master)).is_ok());  // B's probe learns the owner node
  const std::vector<ManifestEntry> mid{on_master[0], on_master[1]};
  ASSERT_EQ(::kill(m.pid, SIGSTOP), 0);
  ASSERT_TRUE(b->add_request({99, 2048, 1024, mid.size() * kObject, 16}).is_ok());
  ASSERT_TRUE(b->report_hit(99, mid).is_ok());
  std::optional<Status> loaded;
  ASSERT_TRUE(b->update_order(std::vector<uint64_t>{99}).is_ok());
  ASSERT_TRUE(b->admitted(99).is_ok());
  auto answer =
      b->request_retrieval(99, [&](ClaimId, Result<RetrievalPath> p) { loaded = p.status(); });
  ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
  ASSERT_EQ(*answer, RetrievalAnswer::kWait);
  // Committed and fetching: both objects reserved while their fetch waits on the stopped node.
  EXPECT_EQ(DaemonTest::stat_of(*b, "tier_reserved_bytes"), 2.0 * kObject);
  EXPECT_GE(DaemonTest::stat_of(*b, "remote_claim_fetching"), 1);
  ASSERT_EQ(::kill(m.pid, SIGKILL), 0);
  ASSERT_TRUE(DaemonTest::wait_for(*b, [&] { return loaded.has_value(); }));
  EXPECT_EQ(loaded->code(), StatusCode::kNotFound) << loaded->to_string();
  EXPECT_NE(loaded->message().find("unavailable"), std::string::npos) << loaded->to_string();
  EXPECT_TRUE(b->finished(99, 16).is_ok());
  EXPECT_EQ(DaemonTest::stat_of(*b, "tier_protected_bytes"), 0);
  EXPECT_EQ(DaemonTest::stat_of(*b, "tier_reserved_bytes"), 0);
  EXPECT_EQ(DaemonTest::stat_of(*b, "store_objects"), 0);  // nothing unverified stored
  // The claim failed at its first failed fetch; its other fetch ends (and is counted) on its own.
  for (int i = 0; i < 500 && node_sum(*b, "remote_node_bytes_in_flight") != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double mid_misses = DaemonTest::stat_of(*b, "remote_claim_misses_total");
  EXPECT_GE(mid_misses, 1);
  size_t next = 0, failed = 0, served = 0;
  uint64_t id = 100;
  const Clock::time_point start = Clock::now();
  while (next < on_master.size() && served < 3 && Clock::now() - start < std::chrono::seconds(30)) {
    Status hit = claim_and_check(*b, ++id, {on_master[next]});  // checks the bytes when OK
    if (hit.is_ok()) {
      ++served;
      ++next;  // in B's store now: the next claim needs another object
    } else {
      EXPECT_EQ(hit.code(), StatusCode::kNotFound) << hit.to_string();
      ++failed;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  EXPECT_GT(failed, 0u);
  EXPECT_EQ(served, 3u) << "the replica never served the killed master's objects";
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_objects_stored_total"), double(served));
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_claim_misses_total") - mid_misses +
                DaemonTest::stat_of(*b, "remote_claims_refused_unhealthy_total"),
            double(failed));
  EXPECT_EQ(DaemonTest::stat_of(*b, "tier_protected_bytes"), 0);
  EXPECT_EQ(DaemonTest::stat_of(*b, "tier_reserved_bytes"), 0);
  EXPECT_EQ(DaemonTest::stat_of(*b, "claims_staging"), 0);
  EXPECT_GE(DaemonTest::stat_of(*b, "remote_node_failures_total_" + master), 1);
  remote::cluster().restart(master);
}

// Puts well beyond the cluster's memory (3 masters of 64 MiB): the cluster evicts by its own
// policy (allkeys-lru), every put and publish succeeds, the evictions are counted, and an
// evicted object is a plain miss for another daemon's lookup.
TEST_F(RemoteDaemons, AFullClusterEvictsAndCountsItNeverAnError) {
  auto a = client(0);
  auto b = client(1);
  ASSERT_TRUE(a && b);
  const int n = 240;
  const auto m = put(*a, 5000, n);
  EXPECT_TRUE(publishes_drained(*a));
  EXPECT_EQ(DaemonTest::stat_of(*a, "remote_publish_failed_total"), 0);
  EXPECT_EQ(DaemonTest::stat_of(*a, "remote_published_total") +
                DaemonTest::stat_of(*a, "remote_publish_dropped_total"),
            n);
  EXPECT_EQ(DaemonTest::stat_of(*a, "store_objects"), n);
  ASSERT_TRUE(wait_stat(*a, "remote_cluster_evicted_keys", 1));
  // The cluster's LRU is approximate (it samples keys): some objects are gone, a plain miss
  // (absent) for B's lookup; one that is still there is served.
  double absent = 0;
  std::optional<ManifestEntry> present;
  for (const ManifestEntry& e : m) {
    auto sizes = lookup(*b, std::vector<Key>{e.key});
    ASSERT_TRUE(sizes.is_ok()) << sizes.status().to_string();
    if ((*sizes)[0] == 0) ++absent;
    if ((*sizes)[0] == kObject) present = e;
  }
  EXPECT_GT(absent, 0);
  EXPECT_GE(DaemonTest::stat_of(*b, "remote_probes_total_absent"), absent);  // a retry asks again
  ASSERT_TRUE(present.has_value());
  EXPECT_TRUE(claim_and_check(*b, 41, {*present}).is_ok());
}

class RemoteSlowNodes : public RemoteDaemons {
 protected:
  // 1 MiB at about 1 MiB/s: a TTR near a second, above a bound of 100 ms.
  std::vector<std::string> remote_args() const override {
    return {"--set", "remote.node_rate_gib_s=0.001", "--set", "remote.max_claim_fetch_ms=100"};
  }
};

// A claim whose remote TTR is above remote.max_claim_fetch_ms is refused at its report, before
// any fetch: the engine recomputes rather than wait for it.
TEST_F(RemoteSlowNodes, AClaimWhoseRemoteTtrIsAboveTheBoundRecomputes) {
  auto a = client(0);
  auto b = client(1);
  ASSERT_TRUE(a && b);
  const auto m = put_published(*a, 7000, 1);
  ASSERT_TRUE(b->add_request({61, 2048, 1024, kObject, 16}).is_ok());
  Status hit = b->report_hit(61, m);
  EXPECT_EQ(hit.code(), StatusCode::kNotFound) << hit.to_string();
  EXPECT_NE(hit.message().find("above remote.max_claim_fetch_ms (100)"), std::string::npos)
      << hit.to_string();
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_claims_refused_slow_total"), 1);
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_fetches_total_hit"), 0);
  EXPECT_EQ(DaemonTest::stat_of(*b, "store_objects"), 0);
}

}  // namespace
}  // namespace tempokv::testing
