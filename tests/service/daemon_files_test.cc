// tempokvd's files against a real daemon process: tier.path confined to tier.dir (a dax path to
// /dev/dax*), no file the daemon did not create ever replaced or removed (whatever a record in
// its data directory says), files named by the daemon's instance (not its pid), a SIGKILLed
// daemon's files removed by the next one on its data directory, and every file and directory
// the daemon makes its own under any umask.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

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
  // Each runtime's write region is made at its first put, in the instance's directory.
  EXPECT_EQ(hello.write_path, "");
  ASSERT_TRUE((*c)->put(Key{1, 1}, {0, 16}, std::vector<std::byte>(4096, std::byte{7})).is_ok());
  const fs::path region = (*c)->write_region_path();
  EXPECT_EQ(region.parent_path().string(), dir_ + "/shared/tempokvd-" + instance + "-writes");
  EXPECT_THAT(region.filename().string(), ::testing::MatchesRegex("rt-[0-9a-f]{32}"));
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
    ASSERT_TRUE((*c)->put(Key{1, 1}, {0, 16}, std::vector<std::byte>(4096, std::byte{7})).is_ok());
    writes = (*c)->write_region_path();
  }
  ASSERT_EQ(kill(first->pid(), SIGKILL), 0);
  // Not reaped yet (SpawnedDaemon would clean up when it reaps it): dead, its lock released.
  // Up to 30 s: a killed process's exit (its mappings torn down) is slow on loaded cores.
  for (int i = 0; i < 3000 && ::kill(first->pid(), 0) == 0 &&
                  read_all("/proc/" + std::to_string(first->pid()) + "/stat").find(") Z") ==
                      std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(fs::exists(tier));  // nobody cleaned up after the SIGKILL
  auto second = daemon();
  ASSERT_TRUE(second->start());
  EXPECT_FALSE(fs::exists(tier));
  EXPECT_FALSE(fs::exists(writes));
  EXPECT_FALSE(fs::exists(fs::path(writes).parent_path()));
  EXPECT_TRUE(fs::exists(foreign));
  first->stop();  // reaps it; the second holds the lock, so it removes nothing
  EXPECT_EQ(second->stop(), 0);
}

TEST_F(DaemonFilesTest, ADaemonASignalEndedHasItsFilesRemovedWhenReaped) {
  auto d = daemon();
  ASSERT_TRUE(d->start());
  std::string tier;
  {
    auto c = d->connect();
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    tier = (*c)->hello().tier_path;
  }
  ASSERT_EQ(kill(d->pid(), SIGABRT), 0);  // as libzmq's assertions end it
  EXPECT_EQ(d->stop(), 128 + SIGABRT);
  EXPECT_FALSE(fs::exists(tier));
}

// The mode bits of `path` (not following a symbolic link), or -1.
int mode_of(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
}

TEST_F(DaemonFilesTest, UnderUmask000EveryFileTheDaemonMakesIsItsOwn) {
  auto d = daemon();
  d->set_umask(0);
  ASSERT_TRUE(d->start()) << read_all(dir_ + "/log");
  auto c = d->connect();
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  const std::string data = dir_ + "/data";
  EXPECT_EQ(mode_of(data), 0700);
  EXPECT_EQ(mode_of(data + "/store"), 0700);
  EXPECT_EQ(mode_of(data + "/tempokvd.sock") & 0077, 0);
  EXPECT_EQ(mode_of(data + "/tempokvd.shared"), 0600);
  EXPECT_EQ(mode_of(data + "/tempokvd.lock"), 0600);
  EXPECT_EQ(mode_of((*c)->hello().tier_path), 0600);
  ASSERT_TRUE((*c)->put(Key{1, 1}, {0, 16}, std::vector<std::byte>(4096, std::byte{7})).is_ok());
  EXPECT_EQ(mode_of((*c)->write_region_path()), 0600);
  EXPECT_EQ(mode_of(fs::path((*c)->write_region_path()).parent_path()), 0700);
  c->reset();
  EXPECT_EQ(d->stop(), 0);
}

TEST_F(DaemonFilesTest, ADataDirAnyoneMayWriteIsRefused) {
  fs::create_directories(dir_ + "/data");
  ::chmod((dir_ + "/data").c_str(), 0777);
  auto d = daemon();
  EXPECT_FALSE(d->start());
  EXPECT_THAT(read_all(dir_ + "/log"), HasSubstr("data_dir"));
  EXPECT_THAT(read_all(dir_ + "/log"), HasSubstr("0777"));
}

TEST_F(DaemonFilesTest, ARecordOfSharedFilesRemovesOnlyTheDaemonsOwnFiles) {
  // A record as a SIGKILLed daemon would leave, with entries planted beside its own: only the
  // file the daemon makes (its name, in tier.dir, a regular file of this user) is removed.
  const std::string shared = dir_ + "/shared";
  const std::string own = shared + "/tempokvd-0123456789abcdef-tier";
  const std::string outside = dir_ + "/victim";                      // not in tier.dir
  const std::string misnamed = shared + "/victim";                    // not a name it gives
  const std::string dotted = shared + "/../victim2";                  // leaves tier.dir
  const std::string link = shared + "/tempokvd-fedcba9876543210-writes";  // a link to a victim
  for (const std::string& p : {own, outside, misnamed, dir_ + "/victim2"}) {
    std::ofstream(p) << "x";
  }
  fs::create_symlink(outside, link);
  fs::create_directories(dir_ + "/data");
  ::chmod((dir_ + "/data").c_str(), 0700);
  {
    std::ofstream record(dir_ + "/data/tempokvd.shared");
    for (const std::string& p : {own, outside, misnamed, dotted, link}) record << p << "\n";
  }
  ::chmod((dir_ + "/data/tempokvd.shared").c_str(), 0600);
  auto d = daemon();
  ASSERT_TRUE(d->start()) << read_all(dir_ + "/log");
  EXPECT_FALSE(fs::exists(own));
  EXPECT_TRUE(fs::exists(outside));
  EXPECT_TRUE(fs::exists(misnamed));
  EXPECT_TRUE(fs::exists(dir_ + "/victim2"));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_THAT(read_all(dir_ + "/log"), HasSubstr(outside + " (named in"));
  EXPECT_EQ(d->stop(), 0);
}

TEST_F(DaemonFilesTest, ARecordOthersCouldHaveWrittenRemovesNothing) {
  const std::string own = dir_ + "/shared/tempokvd-0123456789abcdef-tier";
  std::ofstream(own) << "x";
  fs::create_directories(dir_ + "/data");
  ::chmod((dir_ + "/data").c_str(), 0700);
  std::ofstream(dir_ + "/data/tempokvd.shared") << own << "\n";
  ::chmod((dir_ + "/data/tempokvd.shared").c_str(), 0666);
  auto d = daemon();
  ASSERT_TRUE(d->start()) << read_all(dir_ + "/log");
  EXPECT_TRUE(fs::exists(own));
  EXPECT_THAT(read_all(dir_ + "/log"), HasSubstr("nothing it names removed"));
  EXPECT_EQ(d->stop(), 0);
}

TEST_F(DaemonFilesTest, ADaxPathMustBeADeviceThatExistsInDevAndNothingIsCreated) {
  // A path that leaves /dev, and a dax-looking name that is no device: the daemon opens a dax
  // tier without O_EXCL, so it never may create (or size) a file there.
  const std::string leaves = dir_ + "/dax-victim";
  const std::string absent = "/dev/dax-tkv-test-" + std::to_string(getpid());
  for (const std::string& path : {"/dev/dax0.0/../.." + leaves, absent}) {
    auto d = daemon({"--set", "tier.backing=dax", "--set", "tier.path=" + path});
    EXPECT_FALSE(d->start()) << path;
    const std::string log = read_all(dir_ + "/log");
    EXPECT_THAT(log, HasSubstr("tier.path")) << path;
    EXPECT_THAT(log, HasSubstr(path + (path == absent ? " does not exist" : "'"))) << path;
  }
  EXPECT_FALSE(fs::exists(leaves));
  EXPECT_FALSE(fs::exists(absent));  // as root, the daemon could have made it in /dev
  std::error_code ec;
  fs::remove(absent, ec);
}

TEST(DaxDevice, OnlyACharacterDeviceNamedDaxDirectlyInDevIsAccepted) {
  EXPECT_EQ(service::resolve_dax_device("/dev/dax-tkv-test-none").status().code(),
            StatusCode::kNotFound);
  // A character device, but not a dax one.
  Result<std::string> null = service::resolve_dax_device("/dev/null");
  EXPECT_EQ(null.status().code(), StatusCode::kInvalidArgument) << null.status().to_string();
  const std::string dir = ::testing::TempDir() + "tkvd-dax-" + std::to_string(getpid());
  fs::create_directories(dir);
  std::ofstream(dir + "/file") << "x";
  Result<std::string> file = service::resolve_dax_device(dir + "/file");
  EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument) << file.status().to_string();
  EXPECT_THAT(file.status().message(), HasSubstr("not a /dev/dax* device"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tempokv::testing
