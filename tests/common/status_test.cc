#include "tempokv/status.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace tempokv {
namespace {

Result<int> half(int v) {
  if (v % 2 != 0) return Status::invalid_argument("value " + std::to_string(v) + " is odd");
  return v / 2;
}

Result<int> quarter(int v) {
  TEMPOKV_ASSIGN_OR_RETURN(int h, half(v));
  return half(h);
}

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.is_ok());
  EXPECT_EQ(s.to_string(), "OK");
}

TEST(Status, ToStringNamesCodeAndMessage) {
  EXPECT_EQ(Status::not_found("key 12 is not in the store").to_string(),
            "NotFound: key 12 is not in the store");
}

TEST(Status, FromErrnoMapsNoSpaceToResourceExhausted) {
  Status s = Status::from_errno(ENOSPC, "write segment 3");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("write segment 3"), std::string::npos);
  EXPECT_EQ(Status::from_errno(EIO, "read").code(), StatusCode::kIOError);
}

TEST(Result, AssignOrReturnPropagatesTheFirstError) {
  EXPECT_EQ(quarter(8).value(), 2);
  EXPECT_EQ(quarter(6).status().message(), "value 3 is odd");
  EXPECT_EQ(quarter(5).status().message(), "value 5 is odd");
}

}  // namespace
}  // namespace tempokv
