// Backing: the memory a fast tier's offsets point into. One interface, four kinds (BackingKind):
// private anonymous memory, a shared mapping of a file or /dev/dax device, a shared memfd whose
// descriptor another process can map (the service), and metadata-only (no memory; simulation).
//
// Ownership: a Backing owns its mapping and descriptor and releases them on destruction; base()
// is stable for its lifetime. Every base is at least 4 KiB-aligned, so offsets that are multiples
// of 4 KiB are valid O_DIRECT targets. Not thread-safe to create or destroy; the bytes themselves
// are written by I/O threads under the fast tier's allocation discipline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "fasttier/fast_tier_options.h"
#include "tempokv/status.h"

namespace tempokv {

class Backing {
 public:
  virtual ~Backing() = default;
  // Start of the arena; nullptr for metadata-only.
  virtual std::byte* base() = 0;
  virtual uint64_t size_bytes() const = 0;
  // A descriptor another process may mmap (memfd, file, dax); -1 when there is none.
  virtual int fd() const { return -1; }
  // True when the arena sits on huge pages (as far as the kernel told us).
  virtual bool huge_pages() const { return false; }
  virtual BackingKind kind() const = 0;
};

// Creates the backing of options.backing with options.capacity_bytes bytes.
Result<std::unique_ptr<Backing>> make_backing(const FastTierOptions& options);

}  // namespace tempokv
