#include "store/format.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>

namespace tempokv::store {
namespace {

using Block = std::array<std::byte, kHeaderBytes>;

RecordHeader sample_record() {
  RecordHeader h;
  h.flags = 0;
  h.segment_id = 42;
  h.sequence = 1234567;
  h.key = {0x1111222233334444ULL, 0x5555666677778888ULL};
  h.tokens = {256, 512};
  h.payload_bytes = 32 * kMiB + 17;
  h.payload_checksum = {0xabcdef, 0x123456};
  return h;
}

TEST(FormatTest, RecordHeaderRoundTrips) {
  Block b;
  encode_record_header(sample_record(), b);
  DecodedRecordHeader d = decode_record_header(b);
  ASSERT_EQ(d.defect, HeaderDefect::kNone);
  EXPECT_EQ(d.header.segment_id, 42u);
  EXPECT_EQ(d.header.sequence, 1234567u);
  EXPECT_EQ(d.header.key, sample_record().key);
  EXPECT_EQ(d.header.tokens, (TokenRange{256, 512}));
  EXPECT_EQ(d.header.payload_bytes, 32 * kMiB + 17);
  EXPECT_EQ(d.header.payload_checksum, (Checksum128{0xabcdef, 0x123456}));
  EXPECT_EQ(d.header.record_bytes(), kHeaderBytes + 32 * kMiB + kBlockBytes);
}

TEST(FormatTest, RecordHeaderFieldsAreLittleEndianAtDocumentedOffsets) {
  Block b;
  encode_record_header(sample_record(), b);
  auto u64 = [&](size_t off) {
    uint64_t v;
    std::memcpy(&v, b.data() + off, 8);
    return v;
  };
  EXPECT_EQ(std::memcmp(b.data(), "TKVREC01", 8), 0);
  EXPECT_EQ(u64(24), 1234567u);
  EXPECT_EQ(u64(32), 0x1111222233334444ULL);
  EXPECT_EQ(u64(56), 32 * kMiB + 17);
}

TEST(FormatTest, SegmentHeaderRoundTrips) {
  Block b;
  encode_segment_header({7, 1 * kGiB}, b);
  EXPECT_EQ(std::memcmp(b.data(), "TKVSEG01", 8), 0);
  DecodedSegmentHeader d = decode_segment_header(b);
  ASSERT_EQ(d.defect, HeaderDefect::kNone);
  EXPECT_EQ(d.header.segment_id, 7u);
  EXPECT_EQ(d.header.segment_bytes, 1 * kGiB);
}

TEST(FormatTest, FlippedByteAnywhereInHeaderBlockIsDetected) {
  Block good;
  encode_record_header(sample_record(), good);
  for (size_t off = 0; off < kHeaderBytes; off += 97) {
    Block b = good;
    b[off] ^= std::byte{0x01};
    EXPECT_NE(decode_record_header(b).defect, HeaderDefect::kNone) << "offset " << off;
  }
}

TEST(FormatTest, AllZeroBlockIsZeroDefect) {
  Block b{};
  EXPECT_EQ(decode_record_header(b).defect, HeaderDefect::kZero);
}

TEST(FormatTest, HeaderWithZeroedLastSectorIsTorn) {
  Block b;
  encode_record_header(sample_record(), b);
  std::memset(b.data() + kHeaderBytes - 512, 0, 512);
  EXPECT_EQ(decode_record_header(b).defect, HeaderDefect::kTorn);
}

TEST(FormatTest, SegmentHeaderIsNotARecordHeader) {
  Block b;
  encode_segment_header({1, 1 * kMiB}, b);
  EXPECT_EQ(decode_record_header(b).defect, HeaderDefect::kBadMagic);
}

TEST(FormatTest, DataRecordWithEmptyPayloadIsImpossible) {
  RecordHeader h = sample_record();
  h.payload_bytes = 0;
  Block b;
  encode_record_header(h, b);
  EXPECT_EQ(decode_record_header(b).defect, HeaderDefect::kBadField);
}

TEST(FormatTest, ZeroSectorDetectionCoversPartialLastSector) {
  std::vector<std::byte> v(1000, std::byte{1});
  EXPECT_FALSE(has_zero_sector(v.data(), v.size()));
  std::memset(v.data() + 512, 0, 488);
  EXPECT_TRUE(has_zero_sector(v.data(), v.size()));
}

TEST(FormatTest, SegmentFileNamesRoundTrip) {
  EXPECT_EQ(segment_file_name(42), "seg-0000000042.tkv");
  EXPECT_EQ(parse_segment_file_name("seg-0000000042.tkv"), 42u);
  EXPECT_EQ(parse_segment_file_name("seg-00000000x2.tkv"), std::nullopt);
  EXPECT_EQ(parse_segment_file_name("LOCK"), std::nullopt);
  EXPECT_EQ(parse_segment_file_name("seg-9999999999.tkv"), std::nullopt);
}

}  // namespace
}  // namespace tempokv::store
