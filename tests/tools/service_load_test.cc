// The load test against a real tempokvd, shortened for the suite (the full 64 clients x 30 s run
// is `tempokv service-load --clients 64 --seconds 30`).
#include "service_load.h"

#include <gtest/gtest.h>

#include "service/daemon_process.h"

namespace tempokv::cli {
namespace {

TEST(ServiceLoadTest, SixtyFourClientsLeaveTheAccountingAtZero) {
  const std::string dir = ::testing::TempDir() + "tkvd-load-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  tempokv::testing::DaemonProcess daemon(dir);
  ASSERT_TRUE(daemon.start());
  LoadOptions o;
  o.endpoint = daemon.endpoint();
  o.clients = 64;
  o.duration = std::chrono::seconds(4);
  o.objects = 400;  // 100 MiB of KV against a 64 MiB tier: claims wait for SSD reads and evict
  Result<LoadReport> r = run_service_load(o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::cout << format_load_report(*r);
  EXPECT_TRUE(r->problems.empty());
  EXPECT_GT(r->reported, 100u);
  EXPECT_GT(r->completed, 0u);
  EXPECT_EQ(daemon.stop(), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tempokv::cli
