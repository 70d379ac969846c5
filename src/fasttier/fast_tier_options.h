// FastTierOptions: the configuration of one fast tier (DESIGN.md §2): its size, its protected
// budget, its allocation unit and where its bytes live. A plain value; validate() before use.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/units.h"
#include "tempokv/status.h"

namespace tempokv {

// Where the fast tier's bytes live (backing.h).
enum class BackingKind {
  kAnonymous,  // private anonymous memory (optionally huge pages)
  kFile,       // a shared mapping of a file or a /dev/dax* device (FastTierOptions::path)
  kMemfd,      // a shared memfd whose descriptor is exposed for another process (the service)
  kMetadata,   // no memory at all: offsets and accounting only (simulated mode)
};

struct FastTierOptions {
  uint64_t capacity_bytes = 1 * kGiB;  // size of the arena; a multiple of slot_bytes
  // Protected + reserved bytes never exceed this; must be below capacity_bytes. Not a partition:
  // unprotected cache may use the whole arena while the budget is unused.
  uint64_t protected_budget_bytes = 512 * kMiB;
  // Allocation unit, a multiple of 4 KiB. Set it to the chunk size rounded up to 4 KiB for the
  // no-fragmentation guarantee of docs/fast-tier.md; 4 KiB gives a page-granular allocator.
  uint64_t slot_bytes = kBlockBytes;
  BackingKind backing = BackingKind::kAnonymous;  // where the bytes live
  std::string path;         // kFile only: a file (created, sized to capacity) or /dev/daxX.Y
  bool huge_pages = false;  // kAnonymous, kMemfd: use huge pages when the system has them
  // kFile, kMemfd: fault every page in at creation (MAP_POPULATE), so the first SSD read into a
  // page does not pay for allocating it (measured on /dev/shm: 0.45-1.1 GB/s of first staging
  // without, 2.0-2.5 GB/s with).
  bool populate = false;

  // Rejects nonsense with a message naming the field.
  Status validate() const;
};

std::string_view backing_kind_name(BackingKind kind);
// "anonymous", "file", "memfd", "metadata".
Result<BackingKind> parse_backing_kind(std::string_view name);

}  // namespace tempokv
