// Descriptors a hostile peer cannot exhaust, against a real tempokvd process started under a low
// open-files limit: connections beyond what the descriptors allow are refused at accept (libzmq
// aborted the daemon when accept failed with EMFILE), connections that never say hello are
// closed after server.hello_timeout_ms, and server.max_sessions is checked against the limit at
// start.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include <fstream>
#include <sstream>

#include "daemon/accept_guard.h"
#include "daemon/daemon.h"
#include "service/daemon_fixture.h"

namespace tempokv::testing {
namespace {

using ::testing::HasSubstr;

// A plain stream connection to an ipc endpoint that never sends a byte; -1 when it was not made
// (the listener's backlog stayed full for a second).
int idle_connection(const std::string& endpoint) {
  const std::string path = endpoint.substr(std::string("ipc://").size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const timeval wait{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof(wait));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether the daemon closed the connection (its greeting read and dropped).
bool closed_by_peer(int fd) {
  char buf[512];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
  }
}

class DescriptorTest : public DaemonTest {
 protected:
  uint64_t max_open_files() const override { return 256; }
  std::vector<std::string> extra_args() const override {
    return {"--set", "server.max_sessions=64", "--set", "server.hello_timeout_ms=1500"};
  }
};

TEST_F(DescriptorTest, ThreeHundredIdleConnectionsUnder256DescriptorsLeaveTheDaemonServing) {
  auto good = client();
  ASSERT_TRUE(good);
  auto m = put_objects(*good, 900, 1);
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) idle.push_back(idle_connection(daemon_->endpoint()));
  // The good client keeps being served while the connections arrive and after.
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(good->heartbeat().is_ok()) << "call " << i;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GT(stat_of(*good, "connections_refused_total"), 0);
  EXPECT_LE(stat_of(*good, "connections"), 256 - service::AcceptGuard::kHeadroom);
  // Never a hello: each is closed after the hello timeout, and a new client finds room.
  ASSERT_TRUE(wait_for(*good, [&] {
    for (int fd : idle)
      if (fd >= 0 && !closed_by_peer(fd)) return false;
    return true;
  }));
  for (int fd : idle)
    if (fd >= 0) ::close(fd);
  EXPECT_GT(stat_of(*good, "connections_idle_closed_total"), 0);
  auto later = client();
  ASSERT_TRUE(later);
  std::vector<Key> keys{m[0].key};
  auto sizes = later->lookup(keys);
  ASSERT_TRUE(sizes.is_ok()) << sizes.status().to_string();
  EXPECT_EQ((*sizes)[0], kObject);
  EXPECT_TRUE(good->heartbeat().is_ok());
}

TEST(DescriptorBudget, MaxSessionsBeyondWhatTheDescriptorsAllowIsRefusedAtStart) {
  const std::string dir = ::testing::TempDir() + "tkvd-fds-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  DaemonProcess d(dir + "/data");  // server.max_sessions 1024: more than 256 descriptors allow
  d.limit_open_files(256);
  d.log_to(dir + "/log");
  EXPECT_FALSE(d.start());
  std::stringstream log;
  log << std::ifstream(dir + "/log").rdbuf();
  EXPECT_THAT(log.str(), HasSubstr("server.max_sessions"));
  EXPECT_THAT(log.str(), HasSubstr("RLIMIT_NOFILE 256"));
  std::filesystem::remove_all(dir);
}

TEST(DescriptorBudget, TheDaemonsOwnDescriptorsComeOffTheLimit) {
  service::DaemonConfig c;
  c.server.metrics_address = "";
  c.store.capacity_bytes = 16ULL << 30;
  c.store.segment_bytes = 1ULL << 30;
  c.server.max_sessions = 100;
  auto budget = service::connection_budget(c, 1024);
  ASSERT_TRUE(budget.is_ok()) << budget.status().to_string();
  EXPECT_LT(*budget, 1024u - 16);  // at least the segments come off
  EXPECT_GE(*budget, 100u);
  c.server.max_sessions = 1024;  // the default: more than the usual soft limit allows
  EXPECT_EQ(service::connection_budget(c, 1024).status().code(), StatusCode::kFailedPrecondition);
}

TEST(DescriptorBudget, TheSoftLimitIsRaisedToTheHardLimit) {
  rlimit r{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &r), 0);
  if (r.rlim_max == RLIM_INFINITY || r.rlim_max < 512) GTEST_SKIP() << "hard limit unusable";
  rlimit low = r;
  low.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  auto raised = service::raise_open_files_limit();
  ASSERT_TRUE(raised.is_ok()) << raised.status().to_string();
  EXPECT_EQ(*raised, r.rlim_max);
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &low), 0);
  EXPECT_EQ(low.rlim_cur, r.rlim_max);
}

}  // namespace
}  // namespace tempokv::testing
