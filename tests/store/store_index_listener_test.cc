// The store's index listener (Store::set_index_listener): told of a key entering the index and of
// every way one leaves it (remove, a checksum drop, reclamation), never of a put over an indexed
// key, synchronously as the index changes.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "store_test_util.h"

namespace tempokv::testing {
namespace {

class StoreIndexListenerTest : public SmallStoreTest {
 protected:
  void SetUp() override {
    SmallStoreTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    listen();
  }
  void listen() {
    h_.store->set_index_listener([this](const Key& k, bool added) {
      told_.emplace_back(k, added);
      // Synchronous: the index already says what the listener is told.
      EXPECT_EQ(h_.store->contains(k), added);
    });
  }
  std::vector<std::pair<Key, bool>> told_;
};

TEST_F(StoreIndexListenerTest, NewKeysEnterAndRemovedOrDroppedKeysLeave) {
  ASSERT_TRUE(h_.put_seeded(1, 64 * kKiB).is_ok());
  EXPECT_EQ(told_, (std::vector<std::pair<Key, bool>>{{test_key(1), true}}));
  ASSERT_TRUE(h_.put_seeded(1, 128 * kKiB).is_ok());  // replaced: still indexed, not told
  ASSERT_TRUE(h_.put_seeded(2, 64 * kKiB).is_ok());
  ASSERT_TRUE(h_.remove(test_key(1)).is_ok());
  EXPECT_EQ(told_, (std::vector<std::pair<Key, bool>>{
                       {test_key(1), true}, {test_key(2), true}, {test_key(1), false}}));
  ObjectInfo info = *h_.store->lookup(test_key(2));
  flip_bytes(segment_file(info.segment), info.offset + 1000);
  auto buf = AlignedBuffer::allocate(64 * kKiB);
  ASSERT_FALSE(h_.get(test_key(2), buf->data(), buf->size()).is_ok());
  EXPECT_EQ(told_.back(), std::make_pair(test_key(2), false));
}

TEST_F(StoreIndexListenerTest, ReclaimedKeysLeave) {
  h_.options.capacity_bytes = 3 * kMiB;  // three 300 KiB records a segment, three segments
  ASSERT_TRUE(h_.reopen().is_ok());
  listen();
  for (uint64_t i = 0; i < 12; ++i) ASSERT_TRUE(h_.put_seeded(i, 300 * kKiB).is_ok());
  ASSERT_GT(h_.store->stats().reclaimed_objects, 0u);
  std::vector<Key> left;
  for (const auto& [k, added] : told_)
    if (!added) left.push_back(k);
  EXPECT_EQ(left.size(), h_.store->stats().reclaimed_objects);
  for (const Key& k : left) EXPECT_FALSE(h_.store->contains(k));
}

}  // namespace
}  // namespace tempokv::testing
