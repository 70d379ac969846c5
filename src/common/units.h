// Byte sizes: parsing "32MiB"-style sizes from the command line and alignment helpers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tempokv/status.h"

namespace tempokv {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;
inline constexpr uint64_t kGiB = 1024 * kMiB;
// The alignment of every on-disk record, payload and O_DIRECT transfer.
inline constexpr uint64_t kBlockBytes = 4096;

constexpr uint64_t round_up(uint64_t v, uint64_t align) { return (v + align - 1) / align * align; }
constexpr bool is_aligned(uint64_t v, uint64_t align) { return v % align == 0; }
inline bool is_aligned(const void* p, uint64_t align) {
  return reinterpret_cast<uintptr_t>(p) % align == 0;
}

// Parses "4096", "4KiB", "32MiB", "1.5GiB", "2GB", "1e9" (KB/MB/GB/TB are powers of ten,
// KiB/MiB/GiB/TiB of two; K/M/G/T alone mean KiB/MiB/GiB/TiB), exactly: any size up to UINT64_MAX
// ("18446744073709551615"), a fraction of the unit rounded to the nearest byte (halves up).
// InvalidArgument naming the text for anything else, sizes beyond 64 bits included.
Result<uint64_t> parse_bytes(std::string_view text);
// "32.0 MiB", "1.50 GiB".
std::string format_bytes(uint64_t bytes);

}  // namespace tempokv
