// Quotas a hostile or careless peer cannot get around, against a real tempokvd process: a refused
// hello holds no session slot, a runtime has at most server.max_sessions_per_runtime sessions,
// live requests and manifest entries count against the runtime (not the session that added
// them), and a manifest that lists a key twice is refused before it costs the daemon anything.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "service/daemon_fixture.h"
#include "service/raw_peer.h"

namespace tempokv::testing {
namespace {

using ::testing::HasSubstr;

// The daemon's resident set in KiB (/proc/PID/status VmRSS), 0 when unreadable.
uint64_t rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  }
  return 0;
}

class SessionCapTest : public DaemonTest {
 protected:
  void SetUp() override {
    tokens_ = ::testing::TempDir() + "tkvd-tokens-" + std::to_string(getpid());
    std::ofstream(tokens_) << "engine-a s3cret-a\n";
    ::chmod(tokens_.c_str(), 0600);
    DaemonTest::SetUp();
  }
  void TearDown() override {
    DaemonTest::TearDown();
    std::remove(tokens_.c_str());
  }
  std::vector<std::string> extra_args() const override {
    return {"--set", "server.max_sessions=3",        "--set", "server.max_sessions_per_runtime=2",
            "--set", "server.tokens_file=" + tokens_};
  }
  std::string tokens_;
};

TEST_F(SessionCapTest, RefusedHellosHoldNoSessionSlot) {
  // Peers whose hellos are refused (a wrong token, no common version) keep trying, each time
  // within the heartbeat timeout: none of them may take one of the three slots.
  std::vector<std::unique_ptr<RawPeer>> peers;
  for (int i = 0; i < 6; ++i) peers.push_back(std::make_unique<RawPeer>(daemon_->endpoint()));
  for (uint64_t round = 1; round <= 3; ++round) {
    for (size_t i = 0; i < peers.size(); ++i) {
      service::Hello h{{1}, "hostile"};
      if (i % 2 == 0) {
        h.runtime = "engine-a";
        h.token = "wrong";
      } else {
        h.versions = {99};
      }
      auto m = peers[i]->ask(request(round, h));
      ASSERT_TRUE(m.is_ok()) << m.status().to_string();
      ASSERT_TRUE(std::holds_alternative<service::ErrorReply>(*m));
    }
  }
  std::vector<std::unique_ptr<ServiceClient>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(client());
    ASSERT_TRUE(clients.back()) << "client " << i << " refused";
  }
  EXPECT_EQ(stat_of(*clients[0], "sessions"), 3);
  EXPECT_EQ(stat_of(*clients[0], "sessions_refused_total"), 0);
  EXPECT_EQ(stat_of(*clients[0], "hellos_refused_total"), 18);
}

TEST_F(SessionCapTest, ARuntimeHasNoMoreSessionsThanItsCap) {
  auto join = [&](const std::string& runtime, const std::string& token) {
    ClientOptions o;
    o.endpoint = daemon_->endpoint();
    o.runtime = runtime;
    o.token = token;
    o.call_timeout = std::chrono::seconds(5);
    return ServiceClient::connect(o);
  };
  auto a = join("engine-a", "s3cret-a");
  auto b = join("engine-a", "s3cret-a");
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  auto c = join("engine-a", "s3cret-a");
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted) << c.status().to_string();
  EXPECT_THAT(c.status().message(), HasSubstr("server.max_sessions_per_runtime"));
  // Another runtime is not held back, and a rank that leaves makes room.
  auto other = join("engine-b", "");
  ASSERT_TRUE(other.is_ok()) << other.status().to_string();
  ASSERT_TRUE((*b)->bye().is_ok());
  auto again = join("engine-a", "s3cret-a");
  EXPECT_TRUE(again.is_ok()) << again.status().to_string();
}

class RuntimeQuotaTest : public DaemonTest {
 protected:
  std::vector<std::string> extra_args() const override {
    return {"--set", "server.max_requests_per_runtime=3",
            "--set", "server.max_manifest_entries=8",
            "--set", "server.max_manifest_entries_per_runtime=10"};
  }
  std::unique_ptr<ServiceClient> join(const std::string& runtime) {
    auto c = daemon_->connect(runtime);
    EXPECT_TRUE(c.is_ok()) << c.status().to_string();
    return c.is_ok() ? std::move(c).value() : nullptr;
  }
  static std::vector<ManifestEntry> keys(uint64_t first, int n) {
    std::vector<ManifestEntry> m;
    for (int i = 0; i < n; ++i) m.push_back({Key{1, first + uint64_t(i)}, 4096});
    return m;
  }
};

TEST_F(RuntimeQuotaTest, RequestsOfASessionThatLeftCountAgainstItsRuntime) {
  auto keeper = join("rt");  // keeps the runtime (and its requests) alive
  ASSERT_TRUE(keeper);
  for (int cycle = 0; cycle < 3; ++cycle) {
    auto s = join("rt");
    ASSERT_TRUE(s);
    for (uint64_t i = 0; i < 3; ++i) {
      const uint64_t id = 100 * uint64_t(cycle) + i;
      Status st = s->add_request({id, 2048, 256, 0, 16});
      if (cycle == 0) {
        ASSERT_TRUE(st.is_ok()) << st.to_string();
      } else {
        // The first session's three requests outlived it: the runtime's quota is used up.
        EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.to_string();
        EXPECT_THAT(st.message(), HasSubstr("server.max_requests_per_runtime"));
      }
    }
    ASSERT_TRUE(s->bye().is_ok());
  }
  // The runtime's requests are still the keeper's to end, and ending one makes room.
  ASSERT_TRUE(keeper->cancel(0).is_ok());
  EXPECT_TRUE(keeper->add_request({7, 2048, 256, 0, 16}).is_ok());
}

TEST_F(RuntimeQuotaTest, AManifestThatListsAKeyTwiceIsRefused) {
  auto c = join("");
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->add_request({1, 2048, 256, 0, 16}).is_ok());
  std::vector<ManifestEntry> m = keys(10, 3);
  m.push_back(m[1]);
  Status st = c->report_hit(1, m);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_THAT(st.message(), HasSubstr("listed twice"));
  // Refused before the adapter saw it: the request may still report its hit.
  m.pop_back();
  EXPECT_TRUE(c->report_hit(1, m).is_ok());
}

TEST_F(RuntimeQuotaTest, ARuntimesClaimsHoldNoMoreManifestEntriesThanItsQuota) {
  auto a = join("rt");
  auto b = join("rt");
  ASSERT_TRUE(a && b);
  for (uint64_t id = 1; id <= 3; ++id) ASSERT_TRUE(a->add_request({id, 2048, 256, 0, 16}).is_ok());
  Status big = a->report_hit(1, keys(100, 9));
  EXPECT_EQ(big.code(), StatusCode::kInvalidArgument) << big.to_string();
  EXPECT_THAT(big.message(), HasSubstr("server.max_manifest_entries"));
  ASSERT_TRUE(a->report_hit(1, keys(100, 6)).is_ok());
  // Six of ten are held by the runtime's claims, whichever session asks.
  Status over = b->report_hit(2, keys(200, 6));
  EXPECT_EQ(over.code(), StatusCode::kResourceExhausted) << over.to_string();
  EXPECT_THAT(over.message(), HasSubstr("server.max_manifest_entries_per_runtime"));
  EXPECT_TRUE(b->report_hit(2, keys(200, 4)).is_ok());
  // A claim that ends gives its entries back.
  ASSERT_TRUE(a->cancel(1).is_ok());
  EXPECT_TRUE(b->report_hit(3, keys(300, 6)).is_ok());
}

TEST_F(DaemonTest, ManifestsOfOneKeyRepeatedCostTheDaemonNoMemory) {
  // The attack as found: report_hit manifests of 16,384 copies of one key, each of a new
  // request. Refused, they leave nothing behind.
  auto c = client();
  ASSERT_TRUE(c);
  const std::vector<ManifestEntry> m(service::kMaxManifestEntries, ManifestEntry{Key{5, 5}, 1});
  const uint64_t before = rss_kib(daemon_->pid());
  ASSERT_GT(before, 0u);
  int refused = 0;
  for (uint64_t id = 1; id <= 40; ++id) {
    ASSERT_TRUE(c->add_request({id, 2048, 256, 0, 16}).is_ok());
    refused += c->report_hit(id, m).code() == StatusCode::kInvalidArgument;
  }
  EXPECT_EQ(refused, 40);
  const uint64_t after = rss_kib(daemon_->pid());
  // Accepted, 40 of them held about 30 MiB.
  EXPECT_LT(after, before + 10 * 1024)
      << "VmRSS " << before << " KiB before, " << after << " KiB after";
}

}  // namespace
}  // namespace tempokv::testing
