// pread_range / pwrite_range: the whole range, short only at end of file, errors with errno.
#include "common/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace tempokv {
namespace {

class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/tkv-file-io-XXXXXX";
    fd_ = mkstemp(name);
    ASSERT_GE(fd_, 0);
    path_ = name;
  }
  void TearDown() override {
    if (fd_ >= 0) close(fd_);
    unlink(path_.c_str());
  }
  int fd_ = -1;
  std::string path_;
};

TEST_F(FileIoTest, WritesAndReadsTheWholeRangeAtItsOffset) {
  std::vector<char> out(100'000);
  for (size_t i = 0; i < out.size(); ++i) out[i] = char(i * 7);
  RangeIo w = pwrite_range(fd_, out.data(), out.size(), 4096);
  EXPECT_EQ(w.error, 0);
  EXPECT_EQ(w.result("pwrite").value(), out.size());
  std::vector<char> in(out.size());
  RangeIo r = pread_range(fd_, in.data(), in.size(), 4096);
  EXPECT_EQ(r.result("pread").value(), in.size());
  EXPECT_EQ(in, out);
}

TEST_F(FileIoTest, AReadPastTheEndOfTheFileIsShort) {
  ASSERT_EQ(pwrite_range(fd_, "abcdef", 6, 0).bytes, 6u);
  char in[16] = {};
  RangeIo r = pread_range(fd_, in, sizeof in, 2);
  EXPECT_EQ(r.error, 0);
  EXPECT_EQ(r.bytes, 4u);
  EXPECT_EQ(std::string(in, 4), "cdef");
  EXPECT_EQ(pread_range(fd_, in, sizeof in, 100).bytes, 0u);
}

TEST_F(FileIoTest, AFailureCarriesErrnoAndNamesWhat) {
  char buf[8] = {};
  RangeIo r = pread_range(-1, buf, sizeof buf, 0);
  EXPECT_EQ(r.error, EBADF);
  Result<size_t> st = r.result("pread seg-1");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.status().message().find("pread seg-1"), std::string::npos);
  EXPECT_EQ(st.status().message().find("after"), std::string::npos);  // nothing was read
  RangeIo partial{4096, EIO};
  EXPECT_NE(partial.result("pwrite seg-1").status().message().find("(after 4096 bytes)"),
            std::string::npos);
}

}  // namespace
}  // namespace tempokv
