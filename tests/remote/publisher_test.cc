// The write-behind publisher against the real cluster: bounded queue, drops counted, published
// objects fetchable, failed puts counted.
#include "remote/publisher.h"

#include <gtest/gtest.h>

#include "remote/cluster_fixture.h"

namespace tempokv::remote {
namespace {

using std::chrono::milliseconds;

RemoteIdentity identity(uint64_t hash) {
  RemoteIdentity id;
  id.key = Key{99, hash};
  id.generation = 5;
  return id;
}

std::shared_ptr<std::vector<unsigned char>> object(uint64_t h) {
  return std::make_shared<std::vector<unsigned char>>(pattern(1 << 20, 500 + h));
}

TEST(RemotePublisher, QueuesUpToItsBoundAndDropsTheRest) {
  WriteBehindPublisher p(cluster().config(), 3 << 20);
  std::vector<std::shared_ptr<std::vector<unsigned char>>> objects;
  int accepted = 0;
  for (uint64_t h = 0; h < 10; ++h) {  // before start(): nothing drains, the bound decides
    objects.push_back(object(h));
    accepted += p.publish(identity(h), *objects.back(), objects.back()) ? 1 : 0;
  }
  EXPECT_EQ(accepted, 3);
  EXPECT_EQ(p.stats().dropped_full, 7u);
  EXPECT_EQ(p.stats().queued_bytes, 3u << 20);

  p.start();
  ASSERT_TRUE(p.flush(milliseconds(10000)));
  EXPECT_EQ(p.stats().published, 3u);
  EXPECT_EQ(p.stats().queued_bytes, 0u);
  EXPECT_EQ(p.stats().failed, 0u);
  // The publisher released its holds once the puts ended.
  EXPECT_EQ(objects[0].use_count(), 1);

  RemoteClient c(cluster().config());
  ASSERT_TRUE(c.connect().is_ok());
  std::vector<unsigned char> dst(1 << 20);
  for (uint64_t h = 0; h < 10; ++h) {
    FetchResult r = c.fetch({Key{99, h}, 5, 0}, dst);
    if (h < 3) {
      ASSERT_EQ(r.outcome, FetchOutcome::kHit) << h << " " << r.detail;
      EXPECT_TRUE(std::ranges::equal(dst, *objects[h]));
    } else {
      EXPECT_EQ(r.outcome, FetchOutcome::kAbsent) << h;
    }
  }
}

TEST(RemotePublisher, AnUnreachableClusterCountsFailuresAndNeverBlocksPublish) {
  RemoteConfig config = cluster().config();
  config.seeds = {"127.0.0.1:1"};  // nothing listens there
  WriteBehindPublisher p(config, 8 << 20);
  p.start();
  auto payload = object(0);
  for (uint64_t h = 0; h < 4; ++h) EXPECT_TRUE(p.publish(identity(100 + h), *payload, payload));
  ASSERT_TRUE(p.flush(milliseconds(10000)));
  EXPECT_EQ(p.stats().failed, 4u);
  EXPECT_EQ(p.stats().published, 0u);
}

}  // namespace
}  // namespace tempokv::remote
