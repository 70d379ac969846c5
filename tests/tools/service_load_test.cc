// The load test against a real tempokvd, shortened for the suite (the full 64 clients x 30 s run
// is `tempokv service-load --clients 64 --seconds 30`).
#include "service_load.h"

#include <gtest/gtest.h>

#include "service_chaos.h"
#include "service_hostile.h"

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

// The chaos run, shortened: clients SIGKILLed mid-put and mid-transfer, the daemon SIGKILLed and
// restarted once; every acknowledged put intact and the accounting at zero afterwards.
TEST(ServiceChaosTest, KilledClientsAndADaemonRestartLoseNoAcknowledgedPut) {
  const std::string dir = ::testing::TempDir() + "tkvd-chaos-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  ChaosOptions o;
  o.tempokvd = TEMPOKVD_PATH;
  o.data_dir = dir;
  o.clients = 6;
  o.duration = std::chrono::seconds(5);
  Result<ChaosReport> r = run_service_chaos(o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::cout << format_chaos_report(*r) << chaos_report_json(*r);
  EXPECT_TRUE(r->problems.empty());
  EXPECT_GT(r->acked_puts, 0u);
  EXPECT_EQ(r->acked_puts_intact, r->acked_puts);
  EXPECT_GT(r->claims_verified, 0u);
  EXPECT_EQ(r->mismatches, 0u);
  EXPECT_EQ(r->daemon_restarts, 1u);
  EXPECT_GE(r->clients_killed, 2u);
  EXPECT_EQ(r->live_claims_after, 0);
  EXPECT_EQ(r->protected_bytes_after, 0);
  EXPECT_EQ(r->reserved_bytes_after, 0);
  EXPECT_EQ(r->write_region_bytes_after, 0);
  std::filesystem::remove_all(dir);
}

// The hostile run, shortened (the long one is scripts/service-hostile): every attack at once
// against a daemon under 512 descriptors, beside four well-behaved clients whose every call
// must succeed; the daemon alive at the end and its memory not grown.
TEST(ServiceHostileTest, EveryAttackAtOnceCostsTheGoodClientsNothing) {
  const std::string dir = ::testing::TempDir() + "tkvd-hostile-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  HostileOptions o;
  o.tempokvd = TEMPOKVD_PATH;
  o.data_dir = dir;
  o.duration = std::chrono::seconds(6);
  Result<HostileReport> r = run_service_hostile(o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::cout << format_hostile_report(*r) << hostile_report_json(*r);
  EXPECT_TRUE(r->problems.empty());
  EXPECT_TRUE(r->daemon_alive);
  EXPECT_GT(r->good_calls, 100u);
  EXPECT_EQ(r->good_failures, 0u);
  EXPECT_LT(r->rss_growth_bytes, int64_t(o.max_rss_growth_bytes));
  for (const char* kind : {"idle_connections", "refused_hellos", "flood", "garbage",
                           "write_hoarding", "session_cycling", "duplicate_manifests",
                           "large_manifests", "crowded_runtime", "step_edits"}) {
    EXPECT_GT(r->attacks[kind], 0u) << kind;
  }
  EXPECT_GT(r->defences["connections_refused_total"], 0);
  EXPECT_GT(r->defences["hellos_refused_total"], 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tempokv::cli
