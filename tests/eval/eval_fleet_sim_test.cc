// The simulated fleet (docs/fleet.md): engines on one virtual clock sharing a modelled cluster;
// later turns routed to another engine are served from what an earlier engine computed.
#include <gtest/gtest.h>

#include <set>

#include "eval/eval.h"
#include "eval/scenario_fleet.h"
#include "eval/sim_remote.h"
#include "executor/sim_executor.h"

namespace tempokv {
namespace {

EvalOptions fleet_options() {
  EvalOptions o;
  o.mode = EvalMode::kSim;
  o.scenario = "fleet";
  o.policies = {"tempokv"};
  o.engines = 4;
  o.max_requests = 96;
  o.profiles_dir = TEMPOKV_PROFILES_DIR;
  o.trace_path = "";  // the synthetic conversations, so the test runs anywhere
  return o;
}

TEST(EvalFleetSim, LaterTurnsReuseWhatAnotherEngineComputedAndRecomputeNothing) {
  auto r = run_eval(fleet_options());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->rows.size(), 1u);
  const EvalRow& row = r->rows[0];
  EXPECT_EQ(row.engines, 4u);
  EXPECT_EQ(row.completed, row.requests);
  EXPECT_EQ(row.requests, 96u);
  // A good part of every prompt came from the cluster, and each fetched chunk was loaded.
  EXPECT_GT(row.get("hit_remote"), 0.1);
  EXPECT_GT(row.get("remote_gib"), 0.0);
  EXPECT_EQ(row.get("remote_hit_recomputed_chunks"), 0.0);
  EXPECT_EQ(row.recomputes, 0u);
  EXPECT_NEAR(row.get("hit_local") + row.get("hit_remote") + row.get("miss"), 1.0, 1e-9);
  // The remote claims were committed by the laxity rule and staged like any other.
  EXPECT_GT(row.commits, 0u);
  EXPECT_EQ(row.staged_retrievals + row.ordinary_retrievals + row.no_hit, row.requests);
  // The sources' TTR model learns the rate: its projections are not exact (it never reads the
  // network's truth).
  EXPECT_GT(row.get("remote_ttr_rel_err_p50"), 0.0);
  // Every engine served requests.
  ASSERT_EQ(r->runs.size(), 1u);
  std::set<uint32_t> engines;
  for (const RequestRecord& rec : r->runs[0].records) engines.insert(rec.engine);
  EXPECT_EQ(engines.size(), 4u);
}

// --seeds folds the fleet's own fields too (a real run's wrong chunks and leaked bytes are folded
// as these are): each one's mean over the seeds.
TEST(EvalFleetSim, SeedsFoldTheFleetsFields) {
  EvalOptions o = fleet_options();
  o.max_requests = 48;
  EvalOptions two = o;
  two.seed = 2;
  o.seeds = 2;
  auto folded = run_eval_seeds(o);
  EvalOptions one = o;
  one.seeds = 1;
  auto a = run_eval(one);
  auto b = run_eval(two);
  ASSERT_TRUE(folded.is_ok() && a.is_ok() && b.is_ok()) << folded.status().to_string();
  const EvalRow& r = folded->rows.at(0);
  for (const char* name : {"hit_remote", "miss", "remote_hit_recomputed_chunks"}) {
    SCOPED_TRACE(name);
    EXPECT_DOUBLE_EQ(r.get(std::string(name) + "_mean"),
                     (a->rows.at(0).get(name) + b->rows.at(0).get(name)) / 2);
  }
  EXPECT_NE(a->rows.at(0).get("hit_remote"), b->rows.at(0).get("hit_remote"));  // two workloads
}

// Real mode's run order: seed s starts at the s-th policy, so over as many seeds as policies
// each runs at every place once (the first run of a process is slower than the rest).
TEST(FleetRunOrder, EachSeedStartsOneFurtherAlong) {
  EXPECT_EQ(fleet_run_order(4, 1), (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_EQ(fleet_run_order(4, 2), (std::vector<size_t>{1, 2, 3, 0}));
  EXPECT_EQ(fleet_run_order(4, 4), (std::vector<size_t>{3, 0, 1, 2}));
  EXPECT_EQ(fleet_run_order(4, 5), fleet_run_order(4, 1));
  EXPECT_EQ(fleet_run_order(1, 7), (std::vector<size_t>{0}));
  EXPECT_TRUE(fleet_run_order(0, 3).empty());
}

TEST(EvalFleetSim, RefusesOneEngine) {
  EvalOptions o = fleet_options();
  o.engines = 1;
  auto r = run_eval(o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("--engines >= 2"), std::string::npos);
}

TEST(SimRemoteCluster, PublishLandsAfterItsTransferAndFetchTakesBytesOverRate) {
  SimExecutor ex;
  SimNetworkOptions no;
  no.nodes = 2;
  no.port_bytes_per_s = 1e9;
  no.latency = std::chrono::microseconds(100);
  no.tail_probability = 0;
  SimRemoteCluster cluster(ex, 2, no);
  const Key key{1, 42};
  cluster.publish(0, key, 500'000'000, TokenRange{0, 256});  // 0.5 s at 1 GB/s
  EXPECT_FALSE(cluster.contains(key));
  while (ex.step() && !cluster.contains(key)) {
  }
  ASSERT_TRUE(cluster.contains(key));
  EXPECT_NEAR(to_seconds(ex.now().time_since_epoch()), 0.5001, 1e-6);
  std::optional<Duration> took;
  // Two objects through engine 1's one port: one after the other.
  cluster.fetch(1, {{key, 250'000'000}, {Key{1, 43}, 250'000'000}}, [&](Duration d) { took = d; });
  while (!took && ex.step()) {
  }
  ASSERT_TRUE(took.has_value());
  EXPECT_NEAR(to_seconds(*took), 0.5001, 1e-6);
  EXPECT_EQ(cluster.stats().fetched, 2u);
}

}  // namespace
}  // namespace tempokv
