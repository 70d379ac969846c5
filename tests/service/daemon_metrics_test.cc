// /metrics of a real tempokvd process read by real tools: curl (an HTTP client that is not
// ours) and Prometheus' own checker, `promtool check metrics` (skipped where promtool is not
// installed: scripts/install-deps installs Debian's `prometheus` package, which ships it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "service/daemon_fixture.h"
#include "service/daemon_process.h"

namespace tempokv::testing {
namespace {

using ::testing::HasSubstr;

// Runs a shell command: its exit status and its output (stdout and stderr).
std::pair<int, std::string> run(const std::string& command) {
  std::string out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return {-1, ""};
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

bool have(const std::string& tool) { return run("command -v " + tool).first == 0; }

class MetricsToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "tkvd-mtools-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    port_ = static_cast<uint16_t>(20000 + (getpid() * 7) % 9000);
    daemon_ = std::make_unique<DaemonProcess>(dir_);
    daemon_->serve_metrics("127.0.0.1:" + std::to_string(port_));
    ASSERT_TRUE(daemon_->start());
    // A few replies, a claim and a put, so every family has a value.
    auto c = daemon_->connect();
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    ASSERT_TRUE((*c)->heartbeat().is_ok());
    std::vector<std::byte> bytes(8192, std::byte{1});
    ASSERT_TRUE((*c)->put(Key{1, 1}, TokenRange{0, 256}, bytes).is_ok());
    ASSERT_TRUE((*c)->bye().is_ok());
  }
  void TearDown() override {
    if (daemon_) {
      EXPECT_EQ(daemon_->stop(), 0);
    }
    std::filesystem::remove_all(dir_);
  }
  std::string url(const std::string& path = "/metrics") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::string dir_;
  uint16_t port_ = 0;
  std::unique_ptr<DaemonProcess> daemon_;
};

TEST_F(MetricsToolsTest, CurlGetsTheExpositionWithItsContentType) {
  if (!have("curl")) GTEST_SKIP() << "curl is not installed (scripts/install-deps)";
  auto [code, out] = run("curl -sS -i --max-time 5 " + url());
  ASSERT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("HTTP/1.1 200"));
  EXPECT_THAT(out, HasSubstr("Content-Type: text/plain; version=0.0.4"));
  EXPECT_THAT(out, HasSubstr("# TYPE tempokv_reply_latency_seconds summary"));
  EXPECT_THAT(out, HasSubstr("tempokv_puts_total 1"));
  // HTTP/1.0, a HEAD, and a path that is not /metrics, as curl sends them.
  auto [c10, out10] = run("curl -sS -0 --max-time 5 -o /dev/null -w '%{http_code}' " + url());
  EXPECT_EQ(out10, "200") << out10;
  auto [ch, head] = run("curl -sS -I --max-time 5 " + url());
  EXPECT_THAT(head, HasSubstr("200")) << head;
  auto [c404, out404] = run("curl -sS --max-time 5 -o /dev/null -w '%{http_code}' " + url("/x"));
  EXPECT_EQ(out404, "404") << out404;
}

TEST_F(MetricsToolsTest, PromtoolAcceptsTheExposition) {
  if (!have("promtool")) {
    GTEST_SKIP() << "promtool is not installed (Debian's prometheus package; scripts/install-deps)";
  }
  const std::string file = dir_ + "/metrics.txt";
  auto [got, out] = run("curl -sS --max-time 5 -o " + file + " " + url());
  ASSERT_EQ(got, 0) << out;
  auto [code, lint] = run("promtool check metrics < " + file);
  EXPECT_EQ(code, 0) << lint;
  EXPECT_EQ(lint, "") << "promtool's findings:\n" << lint;
}

// /claims: the claims that ended, each with its timeline and the projection made at its
// commit, as JSON, in the order they ended (the vLLM experiment decomposes timing from it).
class ClaimLogTest : public DaemonTest {
 protected:
  std::string metrics_address() const override {
    return "127.0.0.1:" + std::to_string(port());
  }
  static uint16_t port() { return static_cast<uint16_t>(21000 + (getpid() * 11) % 9000); }
  nlohmann::json claims() {
    auto [code, out] = run("curl -sS --max-time 5 http://127.0.0.1:" + std::to_string(port()) +
                           "/claims");
    EXPECT_EQ(code, 0) << out;
    return nlohmann::json::parse(out, nullptr, false);
  }
};

TEST_F(ClaimLogTest, AClaimThatEndedIsListedWithItsTimelineInOrder) {
  if (!have("curl")) GTEST_SKIP() << "curl is not installed (scripts/install-deps)";
  auto c = client();
  ASSERT_TRUE(c);
  EXPECT_EQ(claims()["claims"].size(), 0u);
  auto m = put_objects(*c, 900, 2);
  stage(*c, 41, m);
  ASSERT_TRUE(c->begin_transfer(41).is_ok());
  ASSERT_TRUE(c->end_transfer(41).is_ok());
  stage(*c, 42, m);
  ASSERT_TRUE(c->cancel(42).is_ok());
  // The session leaves with request 41 never finished: its runtime ends, and the claim that
  // ended with its transfer is not counted (or listed) a second time.
  ASSERT_TRUE(c->bye().is_ok());
  c.reset();
  auto watcher = client();
  ASSERT_TRUE(watcher);
  EXPECT_TRUE(wait_for(*watcher, [&] { return stat_of(*watcher, "runtimes") == 1; }));  // its own
  EXPECT_EQ(stat_of(*watcher, "timed_claims_total"), 2);  // 41 and 42 (ready, then cancelled)
  const nlohmann::json j = claims();
  ASSERT_TRUE(j.is_object()) << j.dump();
  ASSERT_EQ(j["claims"].size(), 2u) << j.dump();
  const nlohmann::json& a = j["claims"][0];
  EXPECT_EQ(a["request"], 41u);  // the id the runtime gave, not the daemon's salted one
  EXPECT_EQ(a["footprint_bytes"], 2 * kObject);
  EXPECT_EQ(a["failure"], "");
  EXPECT_FALSE(a["ordinary"].get<bool>());
  for (const char* k : {"reported_s", "committed_s", "ready_s", "retrieval_requested_s",
                        "transfer_start_s", "transfer_end_s", "released_s"}) {
    ASSERT_TRUE(a[k].is_number()) << k << " in " << a.dump();
  }
  EXPECT_LE(a["reported_s"].get<double>(), a["committed_s"].get<double>());
  EXPECT_LE(a["committed_s"].get<double>(), a["ready_s"].get<double>());
  EXPECT_LE(a["transfer_start_s"].get<double>(), a["transfer_end_s"].get<double>());
  EXPECT_LE(a["transfer_end_s"].get<double>(), a["released_s"].get<double>());
  EXPECT_LE(a["released_s"].get<double>(), j["now_s"].get<double>());
  EXPECT_TRUE(a.contains("projected_use_before_request_s")) << a.dump();
  const nlohmann::json& b = j["claims"][1];
  EXPECT_EQ(b["request"], 42u);
  EXPECT_TRUE(b["transfer_start_s"].is_null()) << b.dump();  // cancelled before any copy
  EXPECT_TRUE(b["released_s"].is_number()) << b.dump();
}

}  // namespace
}  // namespace tempokv::testing
