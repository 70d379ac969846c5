// Where `tempokv eval` finds the repository's files when not told: profiles/ and scripts/plot
// beside the source tree this binary was built from (or above the executable), and the shared
// trace at ../shared/traces relative to the repository.
#pragma once

#include <string>

namespace tempokv::cli {

// The repository root: the first directory that holds profiles/h100-llama-3.1-8b.json among the
// build's source directory and the executable's ancestors. Empty when none does.
std::string find_repo_root(const char* argv0_hint = nullptr);

}  // namespace tempokv::cli
