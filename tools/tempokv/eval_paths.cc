#include "eval_paths.h"

#include <unistd.h>

#include <filesystem>
#include <vector>

namespace tempokv::cli {

std::string find_repo_root(const char* argv0_hint) {
  namespace fs = std::filesystem;
  std::vector<fs::path> starts;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) starts.push_back(exe.parent_path());
  if (argv0_hint) starts.push_back(fs::absolute(argv0_hint, ec).parent_path());
  starts.push_back(fs::current_path(ec));
#ifdef TEMPOKV_SOURCE_DIR
  starts.insert(starts.begin(), fs::path(TEMPOKV_SOURCE_DIR));
#endif
  for (const fs::path& s : starts) {
    for (fs::path p = s; !p.empty(); p = p.parent_path()) {
      if (fs::exists(p / "profiles" / "h100-llama-3.1-8b.json", ec)) return p.string();
      if (p == p.parent_path()) break;
    }
  }
  return "";
}

}  // namespace tempokv::cli
