#include "fasttier/fast_tier_options.h"

#include <string>

namespace tempokv {

Status FastTierOptions::validate() const {
  if (slot_bytes == 0 || !is_aligned(slot_bytes, kBlockBytes)) {
    return Status::invalid_argument(
        "FastTierOptions.slot_bytes must be a non-zero multiple of "
        "4096 (got " +
        std::to_string(slot_bytes) + ")");
  }
  if (capacity_bytes == 0 || !is_aligned(capacity_bytes, slot_bytes)) {
    return Status::invalid_argument(
        "FastTierOptions.capacity_bytes must be a non-zero multiple of slot_bytes (got " +
        std::to_string(capacity_bytes) + ", slot_bytes " + std::to_string(slot_bytes) + ")");
  }
  if (protected_budget_bytes == 0 || protected_budget_bytes >= capacity_bytes) {
    return Status::invalid_argument(
        "FastTierOptions.protected_budget_bytes must be above zero and below capacity_bytes (got " +
        std::to_string(protected_budget_bytes) + " of " + std::to_string(capacity_bytes) + ")");
  }
  if (backing == BackingKind::kFile && path.empty()) {
    return Status::invalid_argument(
        "FastTierOptions.path must name a file or /dev/dax device "
        "when backing is 'file'");
  }
  if (backing != BackingKind::kFile && !path.empty()) {
    return Status::invalid_argument("FastTierOptions.path is only used with backing 'file' (got '" +
                                    path + "' with backing '" +
                                    std::string(backing_kind_name(backing)) + "')");
  }
  return Status::ok();
}

std::string_view backing_kind_name(BackingKind kind) {
  switch (kind) {
    case BackingKind::kAnonymous:
      return "anonymous";
    case BackingKind::kFile:
      return "file";
    case BackingKind::kMemfd:
      return "memfd";
    case BackingKind::kMetadata:
      return "metadata";
  }
  return "unknown";
}

Result<BackingKind> parse_backing_kind(std::string_view name) {
  for (BackingKind k :
       {BackingKind::kAnonymous, BackingKind::kFile, BackingKind::kMemfd, BackingKind::kMetadata}) {
    if (backing_kind_name(k) == name) return k;
  }
  return Status::invalid_argument("fast-tier backing '" + std::string(name) +
                                  "' is not one of anonymous, file, memfd, metadata");
}

}  // namespace tempokv
