// tempokvd's filter of stored keys against a real daemon process: the hello names it, a put
// shows in it at once, a reclaimed key leaves it, a restarted daemon counts in the store it
// opened (in a new file), the file is the daemon's own and goes with it, and a daemon with a
// remote tier offers none.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "daemon/key_filter.h"
#include "daemon/remote_tier_config.h"
#include "service/daemon_fixture.h"

namespace tempokv::testing {
namespace {

using service::KeyFilter;

// The filter file as a client reads it: mapped read-only, answered from its header's seeds.
class MappedFilter {
 public:
  explicit MappedFilter(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    fstat(fd, &st);
    bytes_ = size_t(st.st_size);
    void* p = mmap(nullptr, bytes_, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p != MAP_FAILED) base_ = static_cast<const std::byte*>(p);
  }
  ~MappedFilter() {
    if (base_ != nullptr) munmap(const_cast<std::byte*>(base_), bytes_);
  }
  bool ok() const { return base_ != nullptr && std::memcmp(base_, "TKVKEYS1", 8) == 0; }
  uint64_t u64(size_t at) const {
    uint64_t v = 0;
    std::memcpy(&v, base_ + at, 8);
    return v;
  }
  bool may_hold(const Key& k) const {
    const uint64_t slots = u64(16);
    const auto* c = reinterpret_cast<const uint8_t*>(base_ + KeyFilter::kHeaderBytes);
    return c[KeyFilter::slot(k, u64(24), slots)] != 0 && c[KeyFilter::slot(k, u64(32), slots)] != 0;
  }

 private:
  const std::byte* base_ = nullptr;
  size_t bytes_ = 0;
};

class DaemonKeyFilterTest : public DaemonTest {
 protected:
  // Segments of three 1 MiB objects, two of them at most: the oldest is reclaimed early.
  std::vector<std::string> extra_args() const override {
    return {"--set", "store.segment_bytes=4MiB", "--set", "store.capacity_bytes=8MiB",
            "--set", "store.max_object_bytes=2MiB"};
  }
};

TEST_F(DaemonKeyFilterTest, TheFileFollowsPutsAndReclamations) {
  auto c = client();
  ASSERT_NE(c, nullptr);
  const std::string path = c->hello().key_filter_path;
  ASSERT_FALSE(path.empty());
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  MappedFilter f(path);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f.u64(40), c->hello().instance);
  EXPECT_FALSE(f.may_hold(Key{1, 100}));
  put_objects(*c, 100, 1);
  EXPECT_TRUE(f.may_hold(Key{1, 100}));  // as soon as the put is acknowledged
  put_objects(*c, 101, 11);
  std::vector<Key> keys;
  for (uint64_t i = 100; i < 112; ++i) keys.push_back(Key{1, i});
  auto sizes = c->lookup(keys);
  ASSERT_TRUE(sizes.is_ok()) << sizes.status().to_string();
  int gone = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    // Stored: present (never a false negative). Reclaimed: absent (no collision among 12 keys
    // in 4M counters).
    EXPECT_EQ(f.may_hold(keys[i]), (*sizes)[i] != 0) << "key " << keys[i].hash;
    gone += (*sizes)[i] == 0;
  }
  EXPECT_GT(gone, 0) << "nothing was reclaimed";
}

TEST_F(DaemonKeyFilterTest, ARestartedDaemonCountsInTheStoreItOpenedInANewFile) {
  std::string first;
  {
    auto c = client();
    ASSERT_NE(c, nullptr);
    first = c->hello().key_filter_path;
    put_objects(*c, 200, 2);
    ASSERT_TRUE(c->bye().is_ok());
  }
  ASSERT_EQ(daemon_->stop(), 0);
  EXPECT_FALSE(std::filesystem::exists(first));  // a clean stop removes it
  ASSERT_TRUE(daemon_->start());
  auto c = client();
  ASSERT_NE(c, nullptr);
  const std::string second = c->hello().key_filter_path;
  EXPECT_NE(second, first);
  MappedFilter f(second);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f.u64(40), c->hello().instance);
  EXPECT_TRUE(f.may_hold(Key{1, 200}));
  EXPECT_TRUE(f.may_hold(Key{1, 201}));
  EXPECT_FALSE(f.may_hold(Key{1, 202}));
}

}  // namespace
}  // namespace tempokv::testing

namespace tempokv::testing {
namespace {

// With a remote tier a key missing here may be stored there: no filter is offered or made.
class DaemonKeyFilterRemoteTest : public DaemonTest {
 protected:
  std::vector<std::string> extra_args() const override {
    return {"--set", "remote.seeds=127.0.0.1:1"};
  }
};

TEST_F(DaemonKeyFilterRemoteTest, ADaemonWithARemoteTierOffersNoFilter) {
  if (!service::remote_tier_built()) GTEST_SKIP() << "tempokvd built without the remote tier";
  auto c = client();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->hello().key_filter_path, "");
  // Other daemons (tests running beside this one) may keep their own filters in the same
  // directory: look only for this daemon's, named after its instance like its tier file.
  const std::string tier = c->hello().tier_path;
  ASSERT_TRUE(tier.ends_with("-tier")) << tier;
  const std::string keys = tier.substr(0, tier.size() - 5) + "-keys";
  EXPECT_FALSE(std::filesystem::exists(keys)) << keys;
}

}  // namespace
}  // namespace tempokv::testing
