#include "eval_vllm.h"

#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace tempokv::cli {
namespace {

std::string join(const std::vector<std::string>& xs, char sep) {
  std::string s;
  for (const std::string& x : xs) s += (s.empty() ? "" : std::string(1, sep)) + x;
  return s;
}

// fork + execv with PYTHONPATH set to the checkout's python/; returns the exit code (or 128 +
// the signal).
int spawn(const std::vector<std::string>& argv, const std::string& pythonpath, bool quiet) {
  const pid_t pid = fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    setenv("PYTHONPATH", pythonpath.c_str(), 1);
    if (quiet) {
      std::freopen("/dev/null", "w", stdout);
      std::freopen("/dev/null", "w", stderr);
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The shortest plain decimal that reads back as x (256e6 -> "256000000", 0.5 -> "0.5").
std::string number(double x) {
  char buf[512];  // any double in fixed notation fits (at most ~330 characters)
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed);
  return std::string(buf, r.ptr);
}

}  // namespace

std::string venv_python() {
  const char* v = std::getenv("TEMPOKV_VENV");
  return std::string(v && *v ? v : "/opt/tempokv/venv") + "/bin/python";
}

std::vector<std::string> vllm_eval_argv(const VllmEvalArgs& a) {
  std::vector<std::string> argv = {venv_python(), "-m", "tempokv.experiment", "--scenario",
                                   a.scenario};
  if (!a.policies.empty()) argv.insert(argv.end(), {"--policies", join(a.policies, ',')});
  if (!a.ratios.empty()) {
    std::vector<std::string> r;
    for (double x : a.ratios) r.push_back(number(x));
    argv.insert(argv.end(), {"--ratios", join(r, ',')});
  }
  if (a.read_bytes_per_s) {
    argv.insert(argv.end(), {"--read-bytes-per-s", number(*a.read_bytes_per_s)});
  }
  if (a.interval_s) argv.insert(argv.end(), {"--interval-s", number(*a.interval_s)});
  if (a.requests) argv.insert(argv.end(), {"--requests", std::to_string(*a.requests)});
  if (a.repeats > 1) argv.insert(argv.end(), {"--repeats", std::to_string(a.repeats)});
  if (a.seed) {
    argv.insert(argv.end(), {"--seed", std::to_string(*a.seed)});
  } else {
    argv.insert(argv.end(), {"--seeds", std::to_string(a.seeds)});
  }
  if (!a.json_path.empty()) argv.insert(argv.end(), {"--json", a.json_path});
  if (!a.out_dir.empty()) argv.insert(argv.end(), {"--out", a.out_dir});
  if (a.plots) argv.push_back("--plots");
  if (!a.tempokvd.empty()) argv.insert(argv.end(), {"--tempokvd", a.tempokvd});
  return argv;
}

int run_vllm_eval(const VllmEvalArgs& a) {
  if (a.scenario != "fig4-policies" && a.scenario != "fig6-rate") {
    std::cerr << "eval: --mode vllm runs fig4-policies or fig6-rate (got '" << a.scenario << "')\n";
    return 2;
  }
  const std::string python = venv_python();
  std::error_code ec;
  if (!std::filesystem::exists(python, ec)) {
    std::cerr << "eval: --mode vllm needs the project's Python environment, and there is no "
              << python << " (create it with scripts/install-deps, or point TEMPOKV_VENV at "
              << "one)\n";
    return 2;
  }
  if (a.repo_root.empty()) {
    std::cerr << "eval: --mode vllm cannot find the source tree (its python/ package)\n";
    return 2;
  }
  const std::string pythonpath = a.repo_root + "/python";
  if (spawn({python, "-c", "import vllm, tempokv.experiment"}, pythonpath, true) != 0) {
    std::cerr << "eval: --mode vllm: " << python << " cannot import vllm (or " << pythonpath
              << "/tempokv): install the pinned packages with "
              << "scripts/install-deps\n";
    return 2;
  }
  const std::vector<std::string> argv = vllm_eval_argv(a);
  std::cout << "tempokv eval --mode vllm: " << join(argv, ' ') << std::endl;
  return spawn(argv, pythonpath, false);
}

}  // namespace tempokv::cli
