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
  for (const char* text : {"1e25", "17179869184GiB", "18446744073709551616"}) {
    auto r = parse_bytes(text);
    ASSERT_FALSE(r.is_ok()) << text << " parsed as " << r.value();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status().to_string();
  }
  EXPECT_EQ(parse_bytes("16777215TiB").value(), 16777215ULL * 1024 * kGiB);
}

TEST(RoundUp, RoundsToTheAlignment) {
  EXPECT_EQ(round_up(1, kBlockBytes), kBlockBytes);
  EXPECT_EQ(round_up(kBlockBytes, kBlockBytes), kBlockBytes);
  EXPECT_EQ(round_up(0, kBlockBytes), 0u);
}

}  // namespace
}  // namespace tempokv
