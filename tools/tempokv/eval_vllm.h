// `tempokv eval --mode vllm`: the policy experiment on a real vLLM is a Python program (vLLM is
// Python); this hands the run to `python -m tempokv.experiment` in the project's virtual
// environment ($TEMPOKV_VENV, default /opt/tempokv/venv) and returns its exit code.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tempokv::cli {

struct VllmEvalArgs {
  std::string scenario;                    // fig4-policies or fig6-rate
  std::vector<std::string> policies;       // empty: the scenario's own
  std::vector<double> ratios;              // fig4: empty means 1.0 and 0.5
  uint32_t seeds = 1;                      // seeds 1..N
  std::optional<uint64_t> seed;            // one seed instead
  std::optional<double> read_bytes_per_s;  // tempokvd's SSD read cap (0: none; unset: protocol's)
  std::optional<double> interval_s;        // fig4 arrival interval (unset: the protocol's)
  std::optional<uint32_t> requests;        // requests per run (unset: the protocol's 12)
  uint32_t repeats = 1;                    // runs of each policy per seed and ratio
  std::string json_path, out_dir;
  bool plots = false;
  std::string repo_root;  // python/ and scripts/plot live here
  std::string tempokvd;   // the daemon built beside this binary
};

// The interpreter of the venv: $TEMPOKV_VENV/bin/python (default /opt/tempokv/venv).
std::string venv_python();
// The command line handed over (argv), for tests and the log.
std::vector<std::string> vllm_eval_argv(const VllmEvalArgs& a);
// Checks the venv and vLLM (a clear message on stderr, exit 2 when missing), then runs it.
int run_vllm_eval(const VllmEvalArgs& a);

}  // namespace tempokv::cli
