// `tempokv store` as a user runs it: inspection never deletes, a smaller --capacity is refused
// unless --reclaim, a live writer's store is refused by inspectors, sizes that overflow are named.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "store/format.h"
#include "store/store_test_util.h"

namespace tempokv::testing {
namespace {

struct CliRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

CliRun tempokv(const std::string& args) {
  CliRun r;
  std::string cmd = std::string(TEMPOKV_CLI_PATH) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class StoreCliTest : public SmallStoreTest {
 protected:
  void SetUp() override {
    SmallStoreTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(fill_six_segments(h_, dir_.path()));
  }
  std::string dir() const { return " --dir " + dir_.path(); }
};

TEST_F(StoreCliTest, InspectionCommandsLeaveEverySegment) {
  ASSERT_TRUE(h_.close().is_ok());
  CliRun ls = tempokv("store ls" + dir());
  EXPECT_EQ(ls.exit_code, 0) << ls.output;
  EXPECT_NE(ls.output.find(test_key(16).to_string()), std::string::npos) << ls.output;
  CliRun stats = tempokv("store stats" + dir());
  EXPECT_EQ(stats.exit_code, 0) << stats.output;
  CliRun verify = tempokv("store verify" + dir());
  EXPECT_EQ(verify.exit_code, 0) << verify.output;
  EXPECT_EQ(segment_file_count(dir_.path()), 6u);
  CliRun sized = tempokv("store ls --capacity 2MiB" + dir());  // inspection takes no sizes
  EXPECT_NE(sized.exit_code, 0);
  EXPECT_EQ(segment_file_count(dir_.path()), 6u);
}

TEST_F(StoreCliTest, WriterWithSmallerCapacityIsRefusedUnlessReclaimIsGiven) {
  ASSERT_TRUE(h_.close().is_ok());
  std::string put =
      "store put --key 00000000000000000000000000000001 --segment-bytes 1MiB"
      " --file /dev/null" +
      dir();
  CliRun refused = tempokv(put + " --capacity 2MiB");
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find(std::to_string(6 * kMiB)), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find(std::to_string(2 * kMiB)), std::string::npos) << refused.output;
  EXPECT_EQ(segment_file_count(dir_.path()), 6u);
  CliRun reclaimed = tempokv(put + " --capacity 2MiB --reclaim");
  // The empty payload is refused after the open: the open itself reclaimed.
  EXPECT_NE(reclaimed.output.find("empty payload"), std::string::npos) << reclaimed.output;
  EXPECT_EQ(segment_file_count(dir_.path()), 2u);
}

TEST_F(StoreCliTest, InspectingAStoreALiveWriterHoldsIsRefusedByName) {
  for (const char* cmd : {"store ls", "store stats", "store verify"}) {
    CliRun r = tempokv(cmd + dir());
    EXPECT_EQ(r.exit_code, 1) << cmd << ": " << r.output;
    EXPECT_NE(r.output.find("LOCK"), std::string::npos) << cmd << ": " << r.output;
  }
  EXPECT_EQ(segment_file_count(dir_.path()), 6u);
}

TEST_F(StoreCliTest, CapacityThatOverflowsIsRefusedNamingTheText) {
  ASSERT_TRUE(h_.close().is_ok());
  CliRun r = tempokv(
      "store put --key 00000000000000000000000000000001 --file /dev/null"
      " --capacity 1e25" +
      dir());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("1e25"), std::string::npos) << r.output;
  EXPECT_EQ(segment_file_count(dir_.path()), 6u);
}

}  // namespace
}  // namespace tempokv::testing
