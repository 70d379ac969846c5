// The real fleet (docs/fleet.md): two emulated engines, each with its own tempokvd and store, on
// one real Redis Cluster (scripts/cluster); fails, naming the packages, where redis-server is
// absent. One run of the tempokv policy makes two rows: the plain replay and one with a master
// killed (SIGKILL) partway through the arrivals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "eval/eval.h"

namespace tempokv {
namespace {

TEST(EvalFleetReal, EnginesReuseEachOthersKvThroughTheClusterAndAKilledMasterLeaksNothing) {
  EvalOptions o;
  o.mode = EvalMode::kReal;
  o.scenario = "fleet";
  o.policies = {"tempokv"};
  o.engines = 2;
  o.max_requests = 20;
  o.profiles_dir = TEMPOKV_PROFILES_DIR;
  o.trace_path = "";  // the synthetic conversations
  o.dir = ::testing::TempDir() + "tkv-fleet-" + std::to_string(getpid());
  o.tempokvd = TEMPOKVD_PATH;
  o.cluster_script = std::string(TEMPOKV_SOURCE_DIR) + "/scripts/cluster";
  auto r = run_eval(o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->rows.size(), 2u);
  // A warm-up run came first and made no row.
  EXPECT_EQ(std::count_if(r->notes.begin(), r->notes.end(),
                          [](const std::string& n) {
                            return n.find("a warm-up run of tempokv first") != std::string::npos;
                          }),
            1);
  for (const EvalRow& row : r->rows) {
    SCOPED_TRACE(row.policy);
    EXPECT_EQ(row.completed, row.requests);
    EXPECT_EQ(row.requests, 20u);
    // Every chunk an engine loaded was checked against the bytes its producer wrote.
    EXPECT_GT(row.verified_chunks, 0u);
    EXPECT_EQ(row.get("wrong_chunks"), 0.0);
    EXPECT_EQ(row.mismatched_chunks, 0u);
    // Nothing is left protected or reserved in any daemon at the end.
    EXPECT_EQ(row.get("leaked_bytes"), 0.0);
    EXPECT_EQ(row.get("write_failures"), 0.0);
  }
  const EvalRow& plain = r->rows[0];
  ASSERT_EQ(plain.policy, "tempokv");
  // Engine B found what engine A computed in the cluster and loaded it: nothing recomputed.
  EXPECT_GT(plain.get("hit_remote"), 0.0);
  EXPECT_GT(plain.get("remote_gib"), 0.0);
  EXPECT_EQ(plain.get("remote_claim_misses"), 0.0);
  EXPECT_EQ(plain.get("remote_fetch_errors"), 0.0);
  EXPECT_EQ(plain.get("remote_hit_recomputed_chunks"), 0.0);
  EXPECT_EQ(plain.recomputes, 0u);
  const EvalRow& killed = r->rows[1];
  EXPECT_EQ(killed.policy, "tempokv/master-killed");
  EXPECT_EQ(killed.get("master_killed"), 1.0);
  // Each engine's own records carry verified bytes.
  ASSERT_EQ(r->runs.size(), 2u);
  for (const RunRecords& run : r->runs) {
    std::set<uint32_t> verified;
    for (const RequestRecord& rec : run.records) {
      if (rec.verified_chunks > 0) verified.insert(rec.engine);
    }
    EXPECT_EQ(verified.size(), 2u);
  }
  EXPECT_FALSE(std::filesystem::exists(o.dir));
}

}  // namespace
}  // namespace tempokv
