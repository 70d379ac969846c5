#include "common/units.h"

#include <gtest/gtest.h>

namespace tempokv {
namespace {

TEST(ParseBytes, AcceptsBinaryAndDecimalUnits) {
  EXPECT_EQ(parse_bytes("4096").value(), 4096u);
  EXPECT_EQ(parse_bytes("32MiB").value(), 32 * kMiB);
  EXPECT_EQ(parse_bytes("32M").value(), 32 * kMiB);
  EXPECT_EQ(parse_bytes("1.5GiB").value(), 3 * kGiB / 2);
  EXPECT_EQ(parse_bytes("2GB").value(), 2'000'000'000u);
  EXPECT_EQ(parse_bytes("4 KiB").value(), 4 * kKiB);
}

TEST(ParseBytes, RejectsUnknownUnitNamingIt) {
  auto r = parse_bytes("3 parsecs");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("parsecs"), std::string::npos);
  EXPECT_FALSE(parse_bytes("lots").is_ok());
  EXPECT_FALSE(parse_bytes("-4KiB").is_ok());
}

TEST(ParseBytes, RejectsSizesBeyond64BitsNamingTheText) {
  for (const char* text :
       {"1e25", "17179869184GiB", "18446744073709551616", "16777216TiB", "18446744073709551615.5",
        "1e99999999999", "18446744073709551616e-0", "100000000000000000000000000000"}) {
    auto r = parse_bytes(text);
    ASSERT_FALSE(r.is_ok()) << text << " parsed as " << r.value();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status().to_string();
  }
  EXPECT_EQ(parse_bytes("16777215TiB").value(), 16777215ULL * 1024 * kGiB);
}

TEST(ParseBytes, IsExactAbove2To53AndAcceptsUint64Max) {
  // A double holds every integer only up to 2^53: 2^53 + 1 came back as 2^53.
  EXPECT_EQ(parse_bytes("9007199254740993").value(), 9007199254740993ULL);
  EXPECT_EQ(parse_bytes("18446744073709551615").value(), UINT64_MAX);
  EXPECT_EQ(parse_bytes("18446744073709551615B").value(), UINT64_MAX);
  EXPECT_EQ(parse_bytes("18446744073709551614").value(), UINT64_MAX - 1);
  // 2^54 + 1 bytes in KiB, and 16 EiB less one byte as a fraction of TiB.
  EXPECT_EQ(parse_bytes("17592186044416.0009765625KiB").value(), (1ULL << 54) + 1);
  EXPECT_EQ(parse_bytes("16777215.99999999999909050529822707176208496094TiB").value(), UINT64_MAX);
  EXPECT_EQ(parse_bytes("9007199254740993e0").value(), 9007199254740993ULL);
  EXPECT_EQ(parse_bytes("1.8446744073709551615e19").value(), UINT64_MAX);
}

TEST(ParseBytes, DecimalFormsAreExact) {
  EXPECT_EQ(parse_bytes("1.5GiB").value(), 3 * kGiB / 2);
  EXPECT_EQ(parse_bytes("0.5KiB").value(), 512u);
  EXPECT_EQ(parse_bytes(".25MiB").value(), kMiB / 4);
  EXPECT_EQ(parse_bytes("2.").value(), 2u);
  EXPECT_EQ(parse_bytes("1e9").value(), 1'000'000'000u);
  EXPECT_EQ(parse_bytes("1.5E3KiB").value(), 1500 * kKiB);
  EXPECT_EQ(parse_bytes("2048e-3KiB").value(), 2 * kKiB + 49);  // 2048 × 1.024 = 2097.152
  EXPECT_EQ(parse_bytes("+4096").value(), 4096u);
  // A fraction of a byte rounds to the nearest, halves up.
  EXPECT_EQ(parse_bytes("1.5").value(), 2u);
  EXPECT_EQ(parse_bytes("1.49999999999999999999999999").value(), 1u);
  EXPECT_EQ(parse_bytes("0.0001KB").value(), 0u);
  EXPECT_EQ(parse_bytes("0.0005KB").value(), 1u);
  EXPECT_EQ(parse_bytes("1e-10000").value(), 0u);
  EXPECT_EQ(parse_bytes("0e99999999").value(), 0u);
  for (const char* text : {"", ".", "e9", "1e", "1e+", "0x10", "inf", "nan", "1,5GiB"}) {
    EXPECT_FALSE(parse_bytes(text).is_ok()) << "'" << text << "'";
  }
}

TEST(RoundUp, RoundsToTheAlignment) {
  EXPECT_EQ(round_up(1, kBlockBytes), kBlockBytes);
  EXPECT_EQ(round_up(kBlockBytes, kBlockBytes), kBlockBytes);
  EXPECT_EQ(round_up(0, kBlockBytes), 0u);
}

}  // namespace
}  // namespace tempokv
