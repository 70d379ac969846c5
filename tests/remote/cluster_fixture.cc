#include "remote/cluster_fixture.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "common/splitmix.h"

// Each test executable that starts a cluster takes ports of its own range (bus ports are
// port + 10000, below the ephemeral range): remote_cluster_test 12000-15999,
// daemon_remote_test 16000-17999.
#ifndef TEMPOKV_CLUSTER_BASE_PORT
#define TEMPOKV_CLUSTER_BASE_PORT 12000
#define TEMPOKV_CLUSTER_SPREAD 400
#endif

namespace tempokv::remote {
namespace {

TestCluster g_cluster;

std::string script() { return std::string(TEMPOKV_SOURCE_DIR) + "/scripts/cluster"; }

class ClusterEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_EQ(std::system("command -v redis-server >/dev/null && command -v redis-cli >/dev/null"),
              0)
        << "redis-server/redis-cli not found: install Debian's redis-server and redis-tools "
           "(scripts/install-deps)";
    g_cluster.base_port =
        TEMPOKV_CLUSTER_BASE_PORT + static_cast<int>(::getpid() % TEMPOKV_CLUSTER_SPREAD) * 10;
    g_cluster.dir = "/tmp/tempokv-remote-test-" + std::to_string(::getpid());
    const std::string cmd = script() + " up --port " + std::to_string(g_cluster.base_port) +
                            " --dir " + g_cluster.dir + " --maxmemory 64mb";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  void TearDown() override {
    const std::string cmd = script() + " down --dir " + g_cluster.dir;
    (void)std::system(cmd.c_str());
  }
};

}  // namespace

std::vector<std::string> TestCluster::seeds() const {
  return {"127.0.0.1:" + std::to_string(base_port), "127.0.0.1:" + std::to_string(base_port + 1)};
}

RemoteConfig TestCluster::config() const {
  RemoteConfig c;
  c.seeds = seeds();
  c.connect_timeout = std::chrono::milliseconds(200);
  c.io_timeout = std::chrono::milliseconds(500);
  return c;
}

int TestCluster::pid_of(const std::string& address) const {
  std::ifstream f(dir + "/" + address.substr(address.rfind(':') + 1) + ".pid");
  int pid = 0;
  f >> pid;
  return pid;
}

void TestCluster::restart(const std::string& address) const {
  const std::string cmd =
      script() + " start-node --port " + address.substr(address.rfind(':') + 1) + " --dir " + dir;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

const TestCluster& cluster() { return g_cluster; }

std::vector<unsigned char> pattern(size_t bytes, uint64_t seed) {
  std::vector<unsigned char> out(bytes);
  uint64_t s = seed;
  for (size_t i = 0; i < bytes; i += 8) {
    const uint64_t v = splitmix64(s);
    for (size_t j = 0; j < 8 && i + j < bytes; ++j)
      out[i + j] = static_cast<unsigned char>(v >> (8 * j));
  }
  return out;
}

}  // namespace tempokv::remote

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new tempokv::remote::ClusterEnvironment);
  return RUN_ALL_TESTS();
}
