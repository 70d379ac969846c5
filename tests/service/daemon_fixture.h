// The fixture of the tests that drive a real tempokvd process (daemon_test.cc,
// daemon_claims_test.cc): a fresh daemon per test on its own data directory, helpers to put
// objects, stage a claim and check its bytes in the shared tier.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "service/daemon_process.h"

namespace tempokv::testing {

inline constexpr uint64_t kObject = 1 << 20;

inline std::vector<std::byte> payload(uint64_t seed, size_t bytes = kObject) {
  std::vector<std::byte> p(bytes);
  for (size_t i = 0; i < bytes; ++i) p[i] = std::byte((seed * 131 + i * 7) & 0xff);
  return p;
}

class DaemonTest : public ::testing::Test {
 protected:
  // More `--set` arguments for the daemon of a test (a subclass's choice).
  virtual std::vector<std::string> extra_args() const { return {}; }
  // Where the daemon of a test serves /metrics and /claims (HOST:PORT; "" for nowhere).
  virtual std::string metrics_address() const { return ""; }
  // The daemon's open-files limit, soft and hard (0: the test's).
  virtual uint64_t max_open_files() const { return 0; }
  void SetUp() override {
    dir_ = ::testing::TempDir() + "tkvd-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    daemon_ = std::make_unique<DaemonProcess>(dir_, extra_args());
    daemon_->serve_metrics(metrics_address());
    daemon_->limit_open_files(max_open_files());
    ASSERT_TRUE(daemon_->start()) << "tempokvd did not start";
  }
  void TearDown() override {
    if (daemon_) {
      EXPECT_EQ(daemon_->stop(), 0) << "tempokvd did not stop cleanly";
    }
    std::filesystem::remove_all(dir_);
  }
  std::unique_ptr<ServiceClient> client(std::string runtime = "") {
    auto c = daemon_->connect(std::move(runtime));
    EXPECT_TRUE(c.is_ok()) << c.status().to_string();
    return c.is_ok() ? std::move(c).value() : nullptr;
  }
  // A step queueing requests 1..n (1,024 prompt tokens, 8 output tokens) in that order.
  static service::Step queue_of(uint64_t n) {
    service::Step s;
    for (uint64_t id = 1; id <= n; ++id) {
      s.queued.push_back(RequestInfo{id, 1024, 0, 0, 8});
      s.waiting.push_back(id);
    }
    return s;
  }
  // Puts n objects of model 1 and returns their manifest.
  std::vector<ManifestEntry> put_objects(ServiceClient& c, uint64_t first, int n) {
    std::vector<ManifestEntry> m;
    for (int i = 0; i < n; ++i) {
      const Key key{1, first + uint64_t(i)};
      auto bytes = payload(first + uint64_t(i));
      Status st = c.put(key, TokenRange{uint32_t(i) * 256, uint32_t(i + 1) * 256}, bytes);
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      m.push_back({key, kObject});
    }
    return m;
  }
 public:
  // Waits (dispatching) until pred() holds; false after 5 s.
  static bool wait_for(ServiceClient& c, const std::function<bool()>& pred) {
    for (int i = 0; i < 500; ++i) {
      c.dispatch();
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  static double stat_of(ServiceClient& c, const std::string& name) {
    auto s = c.stats();
    return s.is_ok() ? stat(*s, name) : std::nan("");
  }
  // A per-runtime gauge of c's runtime: name_<runtime id>.
  static double runtime_stat(ServiceClient& c, std::string name) {
    name += '_';  // not "_" + std::to_string(...): GCC 12 -O3 warns -Wrestrict (a false alarm)
    name += std::to_string(c.hello().runtime_id);
    return stat_of(c, name);
  }
 protected:
  // Checks the claim's spans against what was put.
  static void expect_bytes(ServiceClient& c, uint64_t id, const std::vector<ManifestEntry>& m) {
    auto spans = c.objects(id);
    ASSERT_TRUE(spans.is_ok()) << spans.status().to_string();
    ASSERT_EQ(spans->size(), m.size());
    for (size_t i = 0; i < m.size(); ++i) {
      ASSERT_EQ((*spans)[i].bytes, m[i].bytes);
      ASSERT_LE((*spans)[i].offset + m[i].bytes, c.tier_bytes());
      auto want = payload(m[i].key.hash);
      EXPECT_EQ(std::memcmp(c.tier_data() + (*spans)[i].offset, want.data(), want.size()), 0)
          << "object " << i;
    }
  }
  // Puts n objects through a session that then says bye; returns their manifest.
  std::vector<ManifestEntry> put_and_leave(uint64_t first, int n) {
    auto c = client();
    if (!c) return {};
    auto m = put_objects(*c, first, n);
    EXPECT_TRUE(c->bye().is_ok());
    return m;
  }
  // Runs `body` in a forked process with a session of its own; the process dies by SIGKILL,
  // without a word to the daemon, once body returns 0 (it exits with body's code otherwise).
  void in_killed_child(const std::function<int(ServiceClient&)>& body) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto c = daemon_->connect();
      if (!c.is_ok()) _exit(100);
      const int code = body(**c);
      if (code == 0) raise(SIGKILL);
      _exit(code);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exit " << WEXITSTATUS(status);
  }
  // Request `id` through add, hit, order and retrieval until the transfer may begin.
  static void stage(ServiceClient& c, uint64_t id, const std::vector<ManifestEntry>& m) {
    ASSERT_TRUE(c.add_request({id, 2048, 1024, m.size() * kObject, 16}).is_ok());
    ASSERT_TRUE(c.report_hit(id, m).is_ok());
    await_ready(c, id);
  }
  // A reported request from order and admission until its claim is ready.
  static void await_ready(ServiceClient& c, uint64_t id) {
    ASSERT_TRUE(c.update_order(std::vector<uint64_t>{id}).is_ok());
    ASSERT_TRUE(c.admitted(id).is_ok());
    bool ready = false;
    auto answer = c.request_retrieval(id, [&](ClaimId, Result<RetrievalPath> p) {
      EXPECT_TRUE(p.is_ok()) << p.status().to_string();
      ready = true;
    });
    ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
    if (*answer == RetrievalAnswer::kWait) {
      ASSERT_TRUE(wait_for(c, [&] { return ready; }));
    }
  }

  std::string dir_;
  std::unique_ptr<DaemonProcess> daemon_;
};

}  // namespace tempokv::testing
