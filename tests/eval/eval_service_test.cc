// Real mode through tempokvd (EvalOptions.tempokvd): a short fig4-policies run whose engines talk
// to a daemon per run, and the options service mode refuses.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "eval/eval.h"

namespace tempokv {
namespace {

EvalOptions service_options() {
  EvalOptions o;
  o.mode = EvalMode::kReal;
  o.scenario = "fig4-policies";
  o.policies = {"demand", "tempokv"};
  o.ratios = {0.5};
  o.max_requests = 3;
  o.profiles_dir = TEMPOKV_PROFILES_DIR;
  o.dir = ::testing::TempDir() + "tkv-eval-svc-" + std::to_string(getpid());
  o.tempokvd = TEMPOKVD_PATH;
  return o;
}

TEST(EvalService, Fig4ThroughTempokvdCompletesEveryRequestWithVerifiedBytes) {
  if (!std::filesystem::exists(TEMPOKVD_PATH)) GTEST_SKIP() << TEMPOKVD_PATH << " is not built";
  const EvalOptions o = service_options();
  auto r = run_eval(o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->rows.size(), 2u);
  for (const EvalRow& row : r->rows) {
    EXPECT_EQ(row.requests, 3u) << row.policy;
    EXPECT_EQ(row.completed, row.requests) << row.policy;
    EXPECT_EQ(row.recomputes, 0u) << row.policy;
    EXPECT_GT(row.verified_chunks, 0u) << row.policy;
    EXPECT_EQ(row.mismatched_chunks, 0u) << row.policy;
    EXPECT_GT(row.get("service_calls_per_claim"), 1.0) << row.policy;
    EXPECT_GT(row.get("service_ms_per_claim"), 0.0) << row.policy;
    EXPECT_EQ(row.get("service_late_errors"), 0.0) << row.policy;
    EXPECT_NEAR(row.fast_tier_gib, 100.0 / 32, 1e-3) << row.policy;  // real mode's scaled tier
  }
  const EvalRow& tempokv = r->rows[1];
  ASSERT_EQ(tempokv.policy, "tempokv");
  EXPECT_GT(tempokv.c_gib_s_per_req, 0.0);
  EXPECT_GT(tempokv.commits, 0u);
  // The daemons stopped cleanly (run_eval fails otherwise) and their directory is gone.
  EXPECT_FALSE(std::filesystem::exists(o.dir));
}

TEST(EvalService, RefusesSimulatedModeAndTheBaseline) {
  EvalOptions sim = service_options();
  sim.mode = EvalMode::kSim;
  auto r = run_eval(sim);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("real mode only"), std::string::npos)
      << r.status().to_string();

  EvalOptions dax = service_options();
  dax.policies = {"tempokv", "lmcache-dax"};
  r = run_eval(dax);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("lmcache-dax"), std::string::npos) << r.status().to_string();

  EvalOptions trace = service_options();
  trace.scenario = "trace";
  EXPECT_FALSE(run_eval(trace).is_ok());
}

}  // namespace
}  // namespace tempokv
