#include "transfer/restore_path.h"

#include <algorithm>

namespace tempokv {

RestorePathOptions default_restore_options(std::string_view path, uint64_t chunk_bytes) {
  constexpr uint64_t kMiB = 1ULL << 20;
  const uint64_t chunk = (chunk_bytes + 4095) / 4096 * 4096;
  if (path == "direct") return {std::min(chunk, 4 * kMiB), 16};
  if (path == "gds") return {std::min(chunk, 64 * kMiB), 4};
  return {std::min(chunk, 64 * kMiB), 1};
}

const std::vector<std::string>& restore_path_names() {
  static const std::vector<std::string> kNames = {"posix", "odirect-bounce", "direct", "gds"};
  return kNames;
}

}  // namespace tempokv
