// `tempokv eval --mode vllm`'s hand-off to the Python driver: the command line it builds and the
// errors it gives before starting anything.
#include "eval_vllm.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>

namespace tempokv::cli {
namespace {

TEST(EvalVllm, HandsTheScenarioPoliciesSeedsAndOutputsToThePythonDriver) {
  setenv("TEMPOKV_VENV", "/opt/some-venv", 1);
  VllmEvalArgs a;
  a.scenario = "fig4-policies";
  a.policies = {"demand", "tempokv"};
  a.ratios = {1.0, 0.5};
  a.seeds = 3;
  a.json_path = "rows.json";
  a.plots = true;
  a.tempokvd = "/b/tempokvd";
  const std::vector<std::string> want = {"/opt/some-venv/bin/python",
                                         "-m",
                                         "tempokv.experiment",
                                         "--scenario",
                                         "fig4-policies",
                                         "--policies",
                                         "demand,tempokv",
                                         "--ratios",
                                         "1,0.5",
                                         "--seeds",
                                         "3",
                                         "--json",
                                         "rows.json",
                                         "--plots",
                                         "--tempokvd",
                                         "/b/tempokvd"};
  EXPECT_EQ(vllm_eval_argv(a), want);
  a.seed = 7;
  const std::vector<std::string> one = vllm_eval_argv(a);
  EXPECT_NE(std::find(one.begin(), one.end(), "--seed"), one.end());
  EXPECT_EQ(std::find(one.begin(), one.end(), "--seeds"), one.end());
  unsetenv("TEMPOKV_VENV");
}

TEST(EvalVllm, AMissingVenvOrAnotherScenarioExitsTwoWithoutRunning) {
  setenv("TEMPOKV_VENV", "/nonexistent/tempokv-venv", 1);
  VllmEvalArgs a;
  a.scenario = "fig4-policies";
  a.repo_root = "/tmp";
  EXPECT_EQ(run_vllm_eval(a), 2);
  a.scenario = "fig5-capacity";
  EXPECT_EQ(run_vllm_eval(a), 2);
  unsetenv("TEMPOKV_VENV");
}

}  // namespace
}  // namespace tempokv::cli
