#include "transfer/restore_path.h"

#include <algorithm>

namespace tempokv {

RestorePathOptions default_restore_options(std::string_view path, uint64_t chunk_bytes) {
  constexpr uint64_t kMiB = 1ULL << 20;
  const uint64_t chunk = (chunk_bytes + 4095) / 4096 * 4096;
  if (path == "direct") return {std::min(chunk, 4 * kMiB), 16, kMiB / 2};
  if (path == "gds") return {std::min(chunk, 64 * kMiB), 4};
  return {std::min(chunk, 64 * kMiB), 1};
}

uint64_t piece_bytes(uint64_t extent_left, uint64_t session_left, const RestorePathOptions& o) {
  uint64_t bytes = std::min(o.slot_bytes, extent_left);
  if (o.tail_min_bytes != 0) {
    const uint64_t quarter = session_left / 4 / 4096 * 4096;
    bytes = std::min(bytes, std::max(o.tail_min_bytes, quarter));
  }
  return bytes;
}

const std::vector<std::string>& restore_path_names() {
  static const std::vector<std::string> kNames = {"posix", "odirect-bounce", "direct", "gds"};
  return kNames;
}

}  // namespace tempokv
