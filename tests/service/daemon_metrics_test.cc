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

}  // namespace
}  // namespace tempokv::testing
