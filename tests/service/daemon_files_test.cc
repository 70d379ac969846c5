// tempokvd's shared files against a real daemon process: tier.path confined to tier.dir, no
// file the daemon did not create ever replaced or removed, files named by the daemon's instance
// (not its pid), and a SIGKILLed daemon's files removed by the next one on its data directory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "daemon/shared_file.h"
#include "service/daemon_process.h"

namespace tempokv::testing {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string read_all(const std::string& path) {
  std::stringstream s;
  s << std::ifstream(path).rdbuf();
  return s.str();
}

class DaemonFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "tkvd-files-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/shared");
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A daemon on dir_/data whose shared files go to dir_/shared, logging to dir_/log.
  std::unique_ptr<DaemonProcess> daemon(std::vector<std::string> extra = {}) {
    extra.insert(extra.begin(), {"--set", "tier.dir=" + dir_ + "/shared"});
    auto d = std::make_unique<DaemonProcess>(dir_ + "/data", extra);
    d->log_to(dir_ + "/log");
    return d;
  }
  std::string dir_;
};

TEST_F(DaemonFilesTest, ATierPathOutsideTierDirIsRefusedAndTheFileThereKept) {
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "not the daemon's";
  auto d = daemon({"--set", "tier.path=" + victim});
  EXPECT_FALSE(d->start());
  EXPECT_THAT(read_all(dir_ + "/log"), HasSubstr("tier.path"));
  EXPECT_EQ(read_all(victim), "not the daemon's");
}

TEST_F(DaemonFilesTest, AnExistingFileInTierDirIsNeverReplaced) {
  const std::string victim = dir_ + "/shared/victim";
  std::ofstream(victim) << "not the daemon's";
  auto d = daemon({"--set", "tier.path=" + victim});
  EXPECT_FALSE(d->start());
  EXPECT_THAT(read_all(dir_ + "/log"), HasSubstr("already exists"));
  EXPECT_EQ(read_all(victim), "not the daemon's");
  // The refused start removed nothing and left no record behind: a later daemon starts.
  fs::remove(victim);
  auto again = daemon({"--set", "tier.path=victim"});
  ASSERT_TRUE(again->start());
  EXPECT_TRUE(fs::exists(victim));
  EXPECT_EQ(again->stop(), 0);
  EXPECT_FALSE(fs::exists(victim));  // its own file, removed at a clean stop
}

TEST_F(DaemonFilesTest, SharedFilesAreNamedByTheInstanceNotThePid) {
  auto d = daemon();
  ASSERT_TRUE(d->start());
  auto c = d->connect();
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  const service::HelloResult& hello = (*c)->hello();
  char instance[17];
  std::snprintf(instance, sizeof(instance), "%016llx",
                static_cast<unsigned long long>(hello.instance));
  EXPECT_EQ(hello.tier_path, dir_ + "/shared/tempokvd-" + instance + "-tier");
  EXPECT_EQ(hello.write_path, dir_ + "/shared/tempokvd-" + instance + "-writes");
  EXPECT_THAT(hello.tier_path, ::testing::Not(HasSubstr("-" + std::to_string(d->pid()) + "-")));
  ASSERT_TRUE((*c)->bye().is_ok());
  c->reset();
  EXPECT_EQ(d->stop(), 0);
  EXPECT_TRUE(fs::is_empty(dir_ + "/shared"));
}

TEST_F(DaemonFilesTest, AKilledDaemonsFilesAreRemovedByTheNextAndOthersKept) {
  // A file that looks like a dead daemon's by the old pid naming, but is no daemon's of this
  // data directory: kept.
  const std::string foreign = dir_ + "/shared/tempokvd-999999-tier";
  std::ofstream(foreign) << "x";
  auto first = daemon();
  ASSERT_TRUE(first->start());
  std::string tier, writes;
  {
    auto c = first->connect();
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    tier = (*c)->hello().tier_path;
    writes = (*c)->hello().write_path;
  }
  ASSERT_EQ(kill(first->pid(), SIGKILL), 0);
  first->stop();  // reaps it
  ASSERT_TRUE(fs::exists(tier));  // nobody cleaned up after the SIGKILL
  auto second = daemon();
  ASSERT_TRUE(second->start());
  EXPECT_FALSE(fs::exists(tier));
  EXPECT_FALSE(fs::exists(writes));
  EXPECT_TRUE(fs::exists(foreign));
  EXPECT_EQ(second->stop(), 0);
}

}  // namespace
}  // namespace tempokv::testing
