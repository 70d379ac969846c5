// tempokvd's filter of stored keys (daemon/key_filter.h) over a simulated store: a key reads as
// present once its put is indexed and absent once it leaves the index (remove, reclamation), the
// index found at open is counted in, and saturated counters never give a false negative.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "daemon/key_filter.h"
#include "executor/sim_executor.h"
#include "ssd/sim_ssd_engine.h"
#include "store/store.h"

namespace tempokv {
namespace {

using service::KeyFilter;
constexpr uint64_t kKiB = 1024;

class KeyFilterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "tkv-keys-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove(path_);
    SsdEngineOptions eo;
    eo.kind = SsdEngineKind::kSimulated;
    engine_ = std::make_unique<SimSsdEngine>(ex_, eo);
    StoreOptions so;
    so.simulated = true;
    so.segment_bytes = 1024 * kKiB;
    so.capacity_bytes = 3 * 1024 * kKiB;
    so.max_object_bytes = 512 * kKiB;
    auto s = Store::open(ex_, *engine_, so);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    store_ = std::move(s).value();
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::unique_ptr<KeyFilter> make(uint64_t slots = 1 << 16) {
    auto f = KeyFilter::create(path_, slots, 42);
    EXPECT_TRUE(f.is_ok()) << f.status().to_string();
    return f.is_ok() ? std::move(f).value() : nullptr;
  }
  void put(uint64_t i, uint64_t bytes = 4 * kKiB) {
    std::optional<Status> r;
    store_->put(Key{7, i}, {0, 16}, nullptr, bytes, [&](Status st) { r = st; });
    ex_.run();
    ASSERT_TRUE(r.has_value() && r->is_ok());
  }
  void remove(uint64_t i) {
    std::optional<Status> r;
    store_->remove(Key{7, i}, [&](Status st) { r = st; });
    ex_.run();
    ASSERT_TRUE(r.has_value() && r->is_ok());
  }

  std::string path_;
  SimExecutor ex_;
  std::unique_ptr<SimSsdEngine> engine_;
  std::unique_ptr<Store> store_;
};

TEST_F(KeyFilterTest, AKeyIsPresentOnceIndexedAndAbsentOnceRemoved) {
  auto f = make();
  ASSERT_NE(f, nullptr);
  f->watch(*store_);
  EXPECT_FALSE(f->may_hold(Key{7, 1}));
  put(1);
  EXPECT_TRUE(f->may_hold(Key{7, 1}));
  EXPECT_EQ(f->keys(), 1u);
  put(1, 8 * kKiB);  // other bytes under the key: replaced, still indexed, counted once
  EXPECT_TRUE(f->may_hold(Key{7, 1}));
  EXPECT_EQ(f->keys(), 1u);
  remove(1);
  EXPECT_FALSE(f->may_hold(Key{7, 1}));
  EXPECT_EQ(f->keys(), 0u);
}

TEST_F(KeyFilterTest, ReclaimedKeysLeaveTheFilter) {
  auto f = make();
  ASSERT_NE(f, nullptr);
  f->watch(*store_);
  // Three 300 KiB objects fill a 1 MiB segment: ten need a fourth, over capacity.
  for (uint64_t i = 0; i < 10; ++i) put(i, 300 * kKiB);
  ASSERT_GT(store_->stats().reclaimed_objects, 0u);
  for (uint64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(f->may_hold(Key{7, i}), store_->contains(Key{7, i})) << "key " << i;
  }
  EXPECT_EQ(f->keys(), store_->stats().objects);
}

TEST_F(KeyFilterTest, TheIndexFoundAtOpenIsCountedIn) {
  put(3);
  put(4);
  auto f = make();
  ASSERT_NE(f, nullptr);
  f->watch(*store_);
  EXPECT_TRUE(f->may_hold(Key{7, 3}));
  EXPECT_TRUE(f->may_hold(Key{7, 4}));
  EXPECT_FALSE(f->may_hold(Key{7, 5}));
}

// 64 counters, 20000 keys (625 increments a counter on average): nearly every counter
// saturates. Whatever is removed, a key still stored always reads as present (false positives
// are allowed, false negatives never).
TEST_F(KeyFilterTest, SaturatedCountersNeverGiveAFalseNegative) {
  auto f = make(64);
  ASSERT_NE(f, nullptr);
  for (uint64_t i = 0; i < 20000; ++i) f->add(Key{9, i});
  uint64_t saturated = 0;
  for (uint64_t s = 0; s < 64; ++s) saturated += f->counter(s) == KeyFilter::kSaturated;
  EXPECT_GT(saturated, 32u);
  for (uint64_t i = 0; i < 20000; i += 2) f->remove(Key{9, i});
  for (uint64_t i = 1; i < 20000; i += 2) ASSERT_TRUE(f->may_hold(Key{9, i})) << "key " << i;
  // Unsaturated counting stays exact: in a large filter a removed key is absent again.
  auto big = KeyFilter::create(path_ + ".big", 1 << 20, 1);
  ASSERT_TRUE(big.is_ok());
  for (uint64_t i = 0; i < 3000; ++i) (*big)->add(Key{9, i});
  for (uint64_t i = 0; i < 3000; i += 2) (*big)->remove(Key{9, i});
  uint64_t present_removed = 0;
  for (uint64_t i = 0; i < 3000; i += 2) present_removed += (*big)->may_hold(Key{9, i});
  EXPECT_LT(present_removed, 5u);  // collisions with the 1500 still there: ~1e-5 each
}

TEST_F(KeyFilterTest, TheFileHasItsHeaderIsTheDaemonsOwnAndGoesWithIt) {
  const mode_t old = umask(0);
  auto f = make(1 << 10);
  umask(old);
  ASSERT_NE(f, nullptr);
  struct stat st {};
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(uint64_t(st.st_size), KeyFilter::kHeaderBytes + (1 << 10));
  std::ifstream in(path_, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GE(bytes.size(), KeyFilter::kHeaderBytes);
  EXPECT_EQ(bytes.substr(0, 8), "TKVKEYS1");
  uint64_t slots = 0, instance = 0;
  uint32_t live = 0;
  std::memcpy(&slots, bytes.data() + 16, 8);
  std::memcpy(&instance, bytes.data() + 40, 8);
  std::memcpy(&live, bytes.data() + 48, 4);
  EXPECT_EQ(slots, 1u << 10);
  EXPECT_EQ(instance, 42u);
  EXPECT_EQ(live, 1u);
  EXPECT_FALSE(KeyFilter::create(path_, 1 << 10, 43).is_ok());  // never replaces a file
  f.reset();
  EXPECT_FALSE(std::filesystem::exists(path_));
  EXPECT_FALSE(KeyFilter::create(path_, 1000, 1).is_ok());  // not a power of two
}

}  // namespace
}  // namespace tempokv
