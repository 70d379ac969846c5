// `tempokv eval --mode vllm`'s hand-off to the Python driver: the command line it builds and the
// errors it gives before starting anything.
#include "eval_vllm.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

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

TEST(EvalVllm, HandsTheReadCapAndArrivalIntervalOverAsNumbersThatReadBack) {
  VllmEvalArgs a;
  a.scenario = "fig4-policies";
  a.read_bytes_per_s = 256e6;
  a.interval_s = 0.75;
  // The word after `flag` in the command line handed over.
  auto after = [](const std::vector<std::string>& argv, const std::string& flag) {
    auto it = std::find(argv.begin(), argv.end(), flag);
    return it == argv.end() || it + 1 == argv.end() ? std::string("(absent)") : *(it + 1);
  };
  EXPECT_EQ(after(vllm_eval_argv(a), "--read-bytes-per-s"), "256000000");
  EXPECT_EQ(after(vllm_eval_argv(a), "--interval-s"), "0.75");
  a.read_bytes_per_s = 0;  // no cap: said, not left out
  EXPECT_EQ(after(vllm_eval_argv(a), "--read-bytes-per-s"), "0");
  a.read_bytes_per_s.reset();
  a.interval_s.reset();
  const std::vector<std::string> plain = vllm_eval_argv(a);
  EXPECT_EQ(std::find(plain.begin(), plain.end(), "--read-bytes-per-s"), plain.end());
  EXPECT_EQ(std::find(plain.begin(), plain.end(), "--interval-s"), plain.end());
}

struct CliRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

CliRun tempokv(const std::string& env, const std::string& args) {
  CliRun r;
  const std::string cmd = env + " " + TEMPOKV_CLI_PATH + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The CLI as a user runs it, against a stand-in venv whose python prints what it was given.
TEST(EvalVllmCli, ReadBytesPerSIntervalSRequestsAndRepeatsReachThePythonDriver) {
  const std::filesystem::path venv =
      std::filesystem::temp_directory_path() / ("eval-vllm-venv-" + std::to_string(getpid()));
  std::filesystem::create_directories(venv / "bin");
  const std::string python = (venv / "bin" / "python").string();
  {
    std::ofstream f(python);
    f << "#!/bin/sh\necho \"driver got: $*\"\n";
  }
  ASSERT_EQ(chmod(python.c_str(), 0755), 0);
  const std::string env = "TEMPOKV_VENV=" + venv.string();
  CliRun r = tempokv(env,
                     "eval --mode vllm --scenario fig4-policies --ratios 1.0 --seeds 3 "
                     "--read-bytes-per-s 256e6 --interval-s 0.75 --requests 36 --repeats 2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("driver got: -m tempokv.experiment --scenario fig4-policies --ratios 1 "
                          "--read-bytes-per-s 256000000 --interval-s 0.75 --requests 36 "
                          "--repeats 2 --seeds 3"),
            std::string::npos)
      << r.output;
  // Not options of the sim or real eval: refused there rather than ignored.
  CliRun sim = tempokv(env, "eval --mode sim --scenario fig4-policies --read-bytes-per-s 256e6");
  EXPECT_EQ(sim.exit_code, 2) << sim.output;
  EXPECT_NE(sim.output.find("--mode vllm"), std::string::npos) << sim.output;
  CliRun neg = tempokv(env, "eval --mode vllm --scenario fig4-policies --interval-s -1");
  EXPECT_NE(neg.exit_code, 0) << neg.output;
  CliRun none = tempokv(env, "eval --mode vllm --scenario fig4-policies --requests 0");
  EXPECT_NE(none.exit_code, 0) << none.output;
  EXPECT_NE(none.output.find("--requests"), std::string::npos) << none.output;
  CliRun sim_requests = tempokv(env, "eval --mode sim --scenario fig4-policies --requests 36");
  EXPECT_EQ(sim_requests.exit_code, 2) << sim_requests.output;
  std::filesystem::remove_all(venv);
}

}  // namespace
}  // namespace tempokv::cli
