#include "store/format.h"

#include <xxhash.h>

#include "common/checksum.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>

namespace tempokv::store {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the on-disk format is little-endian; big-endian hosts need byte swaps here");

constexpr size_t kSectorBytes = 512;

template <typename T>
void put_le(std::byte* block, size_t offset, T v) {
  std::memcpy(block + offset, &v, sizeof v);
}
template <typename T>
T get_le(const std::byte* block, size_t offset) {
  T v;
  std::memcpy(&v, block + offset, sizeof v);
  return v;
}

uint64_t header_checksum(const std::byte* block) {
  return XXH3_64bits(block, kHeaderChecksumOffset);
}

void seal_block(std::byte* block) { put_le<uint64_t>(block, kHeaderChecksumOffset, header_checksum(block)); }

// The defect shared by both header kinds, judged before any field is trusted.
HeaderDefect frame_defect(const std::byte* block, uint64_t magic) {
  if (all_zero(block, kHeaderBytes)) return HeaderDefect::kZero;
  if (get_le<uint64_t>(block, kHeaderChecksumOffset) != header_checksum(block)) {
    if (all_zero(block, kSectorBytes) || all_zero(block + kHeaderBytes - kSectorBytes, kSectorBytes)) {
      return HeaderDefect::kTorn;
    }
    return get_le<uint64_t>(block, 0) == magic ? HeaderDefect::kBadChecksum
                                               : HeaderDefect::kBadMagic;
  }
  if (get_le<uint64_t>(block, 0) != magic) return HeaderDefect::kBadMagic;
  if (get_le<uint16_t>(block, 8) != kFormatVersion) return HeaderDefect::kBadVersion;
  if (get_le<uint32_t>(block, 12) != kHeaderBytes) return HeaderDefect::kBadField;
  return HeaderDefect::kNone;
}

}  // namespace

bool all_zero(const std::byte* p, size_t n) {
  return std::all_of(p, p + n, [](std::byte b) { return b == std::byte{0}; });
}

Checksum128 checksum128(const void* data, size_t bytes) {
  Hash128 h = xxh3_128(data, bytes);
  return {h.low, h.high};
}

void encode_segment_header(const SegmentHeader& h, std::span<std::byte, kHeaderBytes> out) {
  std::byte* b = out.data();
  std::memset(b, 0, kHeaderBytes);
  put_le<uint64_t>(b, 0, kSegmentMagic);
  put_le<uint16_t>(b, 8, kFormatVersion);
  put_le<uint32_t>(b, 12, static_cast<uint32_t>(kHeaderBytes));
  put_le<uint32_t>(b, 16, h.segment_id);
  put_le<uint64_t>(b, 24, h.segment_bytes);
  put_le<uint64_t>(b, 32, h.capacity_bytes);
  seal_block(b);
}

void encode_record_header(const RecordHeader& h, std::span<std::byte, kHeaderBytes> out) {
  std::byte* b = out.data();
  std::memset(b, 0, kHeaderBytes);
  put_le<uint64_t>(b, 0, kRecordMagic);
  put_le<uint16_t>(b, 8, kFormatVersion);
  put_le<uint16_t>(b, 10, h.flags);
  put_le<uint32_t>(b, 12, static_cast<uint32_t>(kHeaderBytes));
  put_le<uint32_t>(b, 16, h.segment_id);
  put_le<uint64_t>(b, 24, h.sequence);
  put_le<uint64_t>(b, 32, h.key.model);
  put_le<uint64_t>(b, 40, h.key.hash);
  put_le<uint32_t>(b, 48, h.tokens.begin);
  put_le<uint32_t>(b, 52, h.tokens.end);
  put_le<uint64_t>(b, 56, h.payload_bytes);
  put_le<uint64_t>(b, 64, h.payload_checksum.low);
  put_le<uint64_t>(b, 72, h.payload_checksum.high);
  put_le<uint64_t>(b, 80, h.aux);
  seal_block(b);
}

DecodedSegmentHeader decode_segment_header(std::span<const std::byte, kHeaderBytes> in) {
  const std::byte* b = in.data();
  DecodedSegmentHeader d;
  d.defect = frame_defect(b, kSegmentMagic);
  if (d.defect != HeaderDefect::kNone) return d;
  d.header.segment_id = get_le<uint32_t>(b, 16);
  d.header.segment_bytes = get_le<uint64_t>(b, 24);
  d.header.capacity_bytes = get_le<uint64_t>(b, 32);
  if (d.header.segment_bytes < 3 * kBlockBytes || !is_aligned(d.header.segment_bytes, kBlockBytes)) {
    d.defect = HeaderDefect::kBadField;
  }
  return d;
}

DecodedRecordHeader decode_record_header(std::span<const std::byte, kHeaderBytes> in) {
  const std::byte* b = in.data();
  DecodedRecordHeader d;
  d.defect = frame_defect(b, kRecordMagic);
  if (d.defect != HeaderDefect::kNone) return d;
  RecordHeader& h = d.header;
  h.flags = get_le<uint16_t>(b, 10);
  h.segment_id = get_le<uint32_t>(b, 16);
  h.sequence = get_le<uint64_t>(b, 24);
  h.key = {get_le<uint64_t>(b, 32), get_le<uint64_t>(b, 40)};
  h.tokens = {get_le<uint32_t>(b, 48), get_le<uint32_t>(b, 52)};
  h.payload_bytes = get_le<uint64_t>(b, 56);
  h.payload_checksum = {get_le<uint64_t>(b, 64), get_le<uint64_t>(b, 72)};
  h.aux = get_le<uint64_t>(b, 80);
  bool known_flags = (h.flags & ~(kFlagTombstone | kFlagSeal)) == 0 && h.flags != 3;
  bool empty_ok = h.flags == 0 ? h.payload_bytes > 0 : h.payload_bytes == 0;
  if (!known_flags || !empty_ok || h.tokens.end < h.tokens.begin || h.payload_bytes > (1ULL << 48)) {
    d.defect = HeaderDefect::kBadField;
  }
  return d;
}

std::string_view header_defect_name(HeaderDefect d) {
  switch (d) {
    case HeaderDefect::kNone: return "valid";
    case HeaderDefect::kZero: return "zero block";
    case HeaderDefect::kTorn: return "torn header";
    case HeaderDefect::kBadMagic: return "bad magic";
    case HeaderDefect::kBadChecksum: return "header checksum mismatch";
    case HeaderDefect::kBadVersion: return "unknown format version";
    case HeaderDefect::kBadField: return "impossible field value";
  }
  return "unknown";
}

bool has_zero_sector(const std::byte* data, size_t bytes) {
  for (size_t off = 0; off < bytes; off += kSectorBytes) {
    if (all_zero(data + off, std::min(kSectorBytes, bytes - off))) return true;
  }
  return false;
}

std::string segment_file_name(uint32_t segment_id) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "seg-%010u.tkv", segment_id);
  return buf;
}

std::optional<uint32_t> parse_segment_file_name(std::string_view name) {
  constexpr std::string_view kPrefix = "seg-", kSuffix = ".tkv";
  if (name.size() != kPrefix.size() + 10 + kSuffix.size() || !name.starts_with(kPrefix) ||
      !name.ends_with(kSuffix)) {
    return std::nullopt;
  }
  uint64_t id = 0;
  for (char c : name.substr(kPrefix.size(), 10)) {
    if (c < '0' || c > '9') return std::nullopt;
    id = id * 10 + static_cast<uint64_t>(c - '0');
  }
  if (id > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(id);
}

}  // namespace tempokv::store
