// The on-disk format of the store (docs/on-disk-format.md is the byte-by-byte specification):
// segment headers, record headers, their encoding and checksums, and segment file names.
//
// Plain values and pure functions; thread-safe. Every multi-byte field is little-endian. A
// header occupies exactly one 4 KiB block and every byte of that block is covered by its header
// checksum, so a flipped bit anywhere in it is detected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/units.h"
#include "tempokv/key.h"
#include "tempokv/status.h"

namespace tempokv::store {

inline constexpr uint64_t kSegmentMagic = 0x3130474553564b54ULL;  // "TKVSEG01" read as LE
inline constexpr uint64_t kRecordMagic = 0x3130434552564b54ULL;   // "TKVREC01" read as LE
inline constexpr uint16_t kFormatVersion = 1;
inline constexpr uint64_t kHeaderBytes = kBlockBytes;
// Offset of the header checksum: the last 8 bytes of the header block.
inline constexpr size_t kHeaderChecksumOffset = kHeaderBytes - 8;

// XXH3-128 of a payload.
struct Checksum128 {
  uint64_t low = 0;
  uint64_t high = 0;
  bool operator==(const Checksum128&) const = default;
};
Checksum128 checksum128(const void* data, size_t bytes);

enum RecordFlags : uint16_t {
  kFlagTombstone = 1,  // remove(): the key's older records no longer count
  kFlagSeal = 2,       // the segment's last record; everything before it was synced first
};

// aux of a tombstone the store wrote itself because the record failed its payload checksum on a
// read (remove() writes 0). Informational: every tombstone hides the key's older records alike.
inline constexpr uint64_t kTombstoneCorrupt = 1;

// Block 0 of every segment file.
struct SegmentHeader {
  uint32_t segment_id = 0;
  uint64_t segment_bytes = 0;  // size the file was preallocated to
  // The writer's capacity_bytes when it made the segment (0: not recorded). The newest segment's
  // is the store's recorded capacity: open tells a capacity cut from a crash with it.
  uint64_t capacity_bytes = 0;
};

// The first block of every record; the payload follows in the next blocks.
struct RecordHeader {
  uint16_t flags = 0;
  uint32_t segment_id = 0;  // the segment holding the record: stale blocks never pass as records
  uint64_t sequence = 0;    // store-wide write order; a later sequence replaces an earlier one
  Key key;
  TokenRange tokens;
  uint64_t payload_bytes = 0;  // exact payload length; the payload is padded to 4 KiB on disk
  Checksum128 payload_checksum;
  // Seal records: the number of records before the seal; tombstones: 0 or kTombstoneCorrupt;
  // otherwise 0.
  uint64_t aux = 0;

  bool tombstone() const { return (flags & kFlagTombstone) != 0; }
  bool seal() const { return (flags & kFlagSeal) != 0; }
  // Header block + payload padded to 4 KiB.
  uint64_t record_bytes() const { return kHeaderBytes + round_up(payload_bytes, kBlockBytes); }
};

// Encoders write exactly kHeaderBytes (zeroing the unused bytes) into `block`.
void encode_segment_header(const SegmentHeader& h, std::span<std::byte, kHeaderBytes> block);
void encode_record_header(const RecordHeader& h, std::span<std::byte, kHeaderBytes> block);

// Why a block is not a valid header.
enum class HeaderDefect {
  kNone,
  kZero,      // the block is all zero: never written (free space, or a header lost in a crash)
  kTorn,      // its first or last 512-byte sector is zero: a header write cut short
  kBadMagic,  // non-zero data that is not a header (payload, garbage)
  kBadChecksum,
  kBadVersion,
  kBadField,  // checksum fine but a field is impossible (sizes, flags)
};
std::string_view header_defect_name(HeaderDefect d);

struct DecodedSegmentHeader {
  HeaderDefect defect = HeaderDefect::kNone;
  SegmentHeader header;
};
struct DecodedRecordHeader {
  HeaderDefect defect = HeaderDefect::kNone;
  RecordHeader header;
};
DecodedSegmentHeader decode_segment_header(std::span<const std::byte, kHeaderBytes> block);
DecodedRecordHeader decode_record_header(std::span<const std::byte, kHeaderBytes> block);

// True when all n bytes at p are zero (a header block never written, free space).
bool all_zero(const std::byte* p, size_t n);
// True when some 512-byte sector of `data` (the final partial one included) is entirely zero:
// the signature of a write cut short, since preallocated space reads as zeros.
bool has_zero_sector(const std::byte* data, size_t bytes);

// "seg-0000000042.tkv"; parse returns the id of a well-formed name only.
std::string segment_file_name(uint32_t segment_id);
std::optional<uint32_t> parse_segment_file_name(std::string_view name);
// A segment set aside for a corrupt header: segment_file_name(id) + this suffix.
inline constexpr std::string_view kQuarantineSuffix = ".quarantine";

}  // namespace tempokv::store
