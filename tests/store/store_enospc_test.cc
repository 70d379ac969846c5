// A full disk fails the put with ResourceExhausted; the store stays usable and reopens cleanly,
// and a half-written record is never served.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include "ssd/fault_injecting_engine.h"
#include "store_test_util.h"

namespace tempokv::testing {
namespace {

// An 8 MiB tmpfs mounted on a fresh directory for the test's lifetime.
class SmallTmpfs {
 public:
  SmallTmpfs() {
    if (dir_.path().empty()) return;
    if (mount("tempokv-enospc", dir_.path().c_str(), "tmpfs", 0, "size=8m") != 0) {
      error_ = std::string("mount tmpfs: ") + std::strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~SmallTmpfs() {
    if (mounted_) umount2(dir_.path().c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return dir_.path(); }
  bool supports_direct() const { return dir_.supports_direct(); }

 private:
  TempDir dir_;
  bool mounted_ = false;
  std::string error_;
};

TEST(StoreEnospcTest, FullFileSystemFailsThePutAndTheStoreRecovers) {
  SmallTmpfs fs;
  if (!fs.mounted()) GTEST_SKIP() << "cannot mount a small tmpfs (" << fs.error() << ")";
  // A filler file the test deletes later, to make space again.
  std::string filler = fs.path() + "/filler";
  {
    int fd = ::open(filler.c_str(), O_CREAT | O_RDWR, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(fallocate(fd, 0, 0, 2 * kMiB), 0);
    ::close(fd);
  }
  StoreHarness h;
  bool direct = fs.supports_direct();  // tmpfs takes O_DIRECT on newer kernels only
  ASSERT_TRUE(h.start(small_options(fs.path() + "/store"),
                      direct ? SsdEngineKind::kUring : SsdEngineKind::kThreadPool, direct)
                  .is_ok());
  std::vector<uint64_t> stored;
  Status failure;
  for (uint64_t i = 0; i < 100 && failure.is_ok(); ++i) {
    failure = h.put_seeded(i, 200 * kKiB);
    if (failure.is_ok()) stored.push_back(i);
  }
  ASSERT_FALSE(failure.is_ok()) << "8 MiB never filled up";
  EXPECT_EQ(failure.code(), StatusCode::kResourceExhausted) << failure.to_string();
  EXPECT_GE(stored.size(), 10u);
  EXPECT_TRUE(h.check_seeded(stored.front(), 200 * kKiB));  // still serving

  ASSERT_EQ(::unlink(filler.c_str()), 0);
  ASSERT_TRUE(h.put_seeded(1000, 200 * kKiB).is_ok());
  stored.push_back(1000);
  ASSERT_TRUE(h.reopen().is_ok());
  EXPECT_EQ(h.store->stats().objects, stored.size());
  for (uint64_t i : stored) EXPECT_TRUE(h.check_seeded(i, 200 * kKiB));
  ASSERT_TRUE(h.close().is_ok());  // verify takes the lock a writer holds
  auto report = verify_store_dir(fs.path() + "/store");
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->corrupt, 0u);
}

TEST(StoreEnospcTest, PayloadWriteFailingWithEnospcIsNotServedAfterReopen) {
  TempDir dir;
  if (!dir.supports_direct()) GTEST_SKIP() << "no O_DIRECT in " << dir.path();
  StoreHarness h;
  FaultInjectingEngine* faults = nullptr;
  ASSERT_TRUE(h.start_with_faults(small_options(dir.path()), &faults).is_ok());
  ASSERT_TRUE(h.put_seeded(1, 128 * kKiB).is_ok());

  // An aligned 128 KiB payload goes out as two writes: header, then payload. Fail the payload.
  FaultInjectingEngine::Rule rule;
  rule.ops = FaultInjectingEngine::kWrites;
  rule.skip = 1;
  rule.count = 1;
  rule.error = ENOSPC;
  faults->add_rule(rule);
  auto src = AlignedBuffer::allocate(128 * kKiB);
  fill_payload(2, src->data(), src->size());
  Status st = h.put(test_key(2), src->data(), src->size());
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.to_string();
  EXPECT_FALSE(h.store->contains(test_key(2)));

  ASSERT_TRUE(h.put_seeded(3, 128 * kKiB).is_ok());  // usable: goes to a fresh segment
  ASSERT_TRUE(h.reopen().is_ok());
  EXPECT_FALSE(h.store->contains(test_key(2)));
  EXPECT_EQ(h.store->stats().torn_records, 1u);
  EXPECT_TRUE(h.check_seeded(1, 128 * kKiB));
  EXPECT_TRUE(h.check_seeded(3, 128 * kKiB));
  ASSERT_TRUE(h.close().is_ok());  // verify takes the lock a writer holds
  auto report = verify_store_dir(dir.path());
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->corrupt, 0u);
  EXPECT_EQ(report->good, 2u);
}

}  // namespace
}  // namespace tempokv::testing
