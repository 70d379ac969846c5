// Two tempokvd processes sharing one real Redis Cluster (scripts/cluster, docs/cluster.md):
// a put on A is published write-behind; B's lookup finds it in the cluster and B's claim fetches
// it into B's store, verified, and stages it like any local object. A corrupted value is a miss
// (the claim fails, never KV); publishes beyond the bound are dropped and counted while the
// engine's puts never wait on the cluster.
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>

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
  auto sizes = b->lookup(keys_of(m));
  ASSERT_TRUE(sizes.is_ok()) << sizes.status().to_string();
  EXPECT_EQ(*sizes, std::vector<uint64_t>(3, kObject));
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_lookup_objects_total"), 3);
  EXPECT_EQ(DaemonTest::stat_of(*b, "store_objects"), 0);

  // B's claim fetches them into its store, then stages them: the bytes A put.
  DaemonTest::stage(*b, 7, m);
  DaemonTest::expect_bytes(*b, 7, m);
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_objects_stored_total"), 3);
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_fetches_total_hit"), 3);
  EXPECT_EQ(DaemonTest::stat_of(*b, "store_objects"), 3);
  EXPECT_EQ(node_sum(*b, "remote_node_fetches_total"), 3);
  EXPECT_EQ(node_sum(*b, "remote_node_fetch_bytes_total"), 3.0 * kObject);
  // A local hit now: no more cluster traffic for them.
  ASSERT_TRUE(b->lookup(keys_of(m)).is_ok());
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

  auto sizes = b->lookup(keys_of(m));
  ASSERT_TRUE(sizes.is_ok());
  EXPECT_EQ(*sizes, std::vector<uint64_t>(2, kObject));  // headers are fine
  ASSERT_TRUE(b->add_request({9, 2048, 1024, 2 * kObject, 16}).is_ok());
  Status hit = b->report_hit(9, m);
  EXPECT_EQ(hit.code(), StatusCode::kNotFound) << hit.to_string();
  EXPECT_NE(hit.message().find("checksum"), std::string::npos) << hit.to_string();
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_fetches_total_checksum"), 1);
  EXPECT_EQ(DaemonTest::stat_of(*b, "remote_claim_misses_total"), 1);
  // The good object was stored; the corrupted one never was.
  EXPECT_EQ(DaemonTest::stat_of(*b, "store_objects"), 1);
  auto again = b->lookup(std::vector<Key>{m[1].key});
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
  for (int i = 0; i < 1000 && DaemonTest::stat_of(*a, "remote_publish_queued_bytes") > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(DaemonTest::stat_of(*a, "remote_publish_queued_bytes"), 0);
  EXPECT_EQ(DaemonTest::stat_of(*a, "remote_published_total") +
                DaemonTest::stat_of(*a, "remote_publish_failed_total") +
                DaemonTest::stat_of(*a, "remote_publish_dropped_total"),
            48);
  EXPECT_GT(DaemonTest::stat_of(*a, "remote_published_total"), 0);
  EXPECT_EQ(DaemonTest::stat_of(*a, "store_objects"), 48);
}

}  // namespace
}  // namespace tempokv::testing
