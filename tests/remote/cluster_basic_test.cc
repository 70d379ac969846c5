// The remote client against a real Redis Cluster: routing, identity, verify-after-fetch,
// resharding redirects, auth and a full cluster.
#include <gtest/gtest.h>

#include <memory>

#include "remote/cluster_fixture.h"
#include "remote/slot.h"

namespace tempokv::remote {
namespace {

RemoteIdentity identity(uint64_t hash, uint64_t generation = 3, uint64_t layout = 0x1a) {
  RemoteIdentity id;
  id.key = Key{77, hash};
  id.generation = generation;
  id.layout_digest = layout;
  return id;
}

std::unique_ptr<RemoteClient> connected() {
  auto c = std::make_unique<RemoteClient>(cluster().config());
  EXPECT_TRUE(c->connect().is_ok());
  return c;
}

TEST(RemoteCluster, SlotOfEveryKeyMatchesClusterKeyslot) {
  RemoteClient c(cluster().config());
  ASSERT_TRUE(c.connect().is_ok());
  for (uint64_t h = 0; h < 50; ++h) {
    const std::string key = object_key(Key{5, h * 0x9e3779b97f4a7c15ull});
    auto r = c.command_at(cluster().seeds()[0], {"CLUSTER", "KEYSLOT", key});
    ASSERT_TRUE(r.is_ok());
    EXPECT_EQ(r.value().text, std::to_string(key_slot(key))) << key;
  }
  EXPECT_EQ(c.masters().size(), 3u);
}

TEST(RemoteCluster, FetchReturnsThePutBytesAndIdentity) {
  RemoteClient c(cluster().config());
  ASSERT_TRUE(c.connect().is_ok());
  for (uint64_t h = 1; h <= 12; ++h) {  // spread over the three masters
    const auto bytes = pattern(100000 + h * 4099, h);
    ASSERT_TRUE(c.put(identity(h), bytes).is_ok());
    std::vector<unsigned char> dst(bytes.size() + 100, 0);
    FetchResult r = c.fetch({Key{77, h}, 3, 0x1a}, dst);
    ASSERT_EQ(r.outcome, FetchOutcome::kHit) << r.detail;
    EXPECT_EQ(r.identity.payload_bytes, bytes.size());
    EXPECT_EQ(r.identity.generation, 3u);
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), dst.begin()));
  }
  EXPECT_EQ(c.stats().count(FetchOutcome::kHit), 12u);
}

TEST(RemoteCluster, AnotherGenerationLayoutOrASmallBufferIsAMiss) {
  auto client = connected();
  RemoteClient& c = *client;
  const auto bytes = pattern(5000, 9);
  ASSERT_TRUE(c.put(identity(100), bytes).is_ok());
  std::vector<unsigned char> dst(bytes.size());
  EXPECT_EQ(c.fetch({Key{77, 100}, 4, 0x1a}, dst).outcome, FetchOutcome::kWrongGeneration);
  EXPECT_EQ(c.fetch({Key{77, 100}, 3, 0x1b}, dst).outcome, FetchOutcome::kWrongLayout);
  std::vector<unsigned char> small(bytes.size() - 1);
  EXPECT_EQ(c.fetch({Key{77, 100}, 3, 0x1a}, small).outcome, FetchOutcome::kTooLarge);
  EXPECT_EQ(c.fetch({Key{77, 101}, 3, 0x1a}, dst).outcome, FetchOutcome::kAbsent);
  // Generation 0 asks for any generation; the connection is still in step after the misses.
  EXPECT_EQ(c.fetch({Key{77, 100}, 0, 0x1a}, dst).outcome, FetchOutcome::kHit);
  EXPECT_EQ(c.stats().count(FetchOutcome::kWrongGeneration), 1u);
  EXPECT_EQ(c.stats().count(FetchOutcome::kAbsent), 1u);
}

TEST(RemoteCluster, ACorruptedOrCutValueIsAMissNeverBytes) {
  auto client = connected();
  RemoteClient& c = *client;
  const auto bytes = pattern(300000, 11);
  const std::string key = object_key(Key{77, 200});
  std::vector<unsigned char> dst(bytes.size());
  auto fetch = [&] { return c.fetch({Key{77, 200}, 3, 0x1a}, dst).outcome; };

  ASSERT_TRUE(c.put(identity(200), bytes).is_ok());
  ASSERT_TRUE(
      c.command(key, {"SETRANGE", key, std::to_string(kHeaderBytes + 123456), "X"}).is_ok());
  EXPECT_EQ(fetch(), FetchOutcome::kChecksum);

  ASSERT_TRUE(c.put(identity(200), bytes).is_ok());
  ASSERT_TRUE(c.command(key, {"SETRANGE", key, "30", "X"}).is_ok());  // inside the header
  EXPECT_EQ(fetch(), FetchOutcome::kBadHeader);

  ASSERT_TRUE(c.put(identity(200), bytes).is_ok());
  ASSERT_TRUE(c.command(key, {"APPEND", key, "tail"}).is_ok());  // longer than the header says
  EXPECT_EQ(fetch(), FetchOutcome::kTruncated);

  ASSERT_TRUE(c.put(identity(200), bytes).is_ok());
  auto head = c.command(key, {"GETRANGE", key, "0", std::to_string(kHeaderBytes + 999)});
  ASSERT_TRUE(head.is_ok());
  ASSERT_TRUE(c.command(key, {"SET", key, head.value().text}).is_ok());  // a cut value
  EXPECT_EQ(fetch(), FetchOutcome::kTruncated);

  // Another key's object stored under this key.
  ASSERT_TRUE(c.put(identity(201), bytes).is_ok());
  const std::string other = object_key(Key{77, 201});
  auto whole = c.command(other, {"GET", other});
  ASSERT_TRUE(whole.is_ok());
  ASSERT_TRUE(c.command(key, {"SET", key, whole.value().text}).is_ok());
  EXPECT_EQ(fetch(), FetchOutcome::kWrongKey);

  ASSERT_TRUE(c.put(identity(200), bytes).is_ok());
  EXPECT_EQ(fetch(), FetchOutcome::kHit);
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), dst.begin()));
}

// A slot migrating between masters: ASK while the key has moved and the slot not yet, then MOVED
// once the slot is assigned to the new owner; the client follows both and reads the same bytes.
TEST(RemoteCluster, FollowsAskAndMovedDuringAResharding) {
  auto client = connected();
  RemoteClient& c = *client;
  auto admin_client = connected();
  RemoteClient& admin = *admin_client;
  const auto bytes = pattern(200000, 13);
  ASSERT_TRUE(c.put(identity(300), bytes).is_ok());
  const std::string key = object_key(Key{77, 300});
  const std::string slot = std::to_string(key_slot(key));
  const std::string from = c.owner_of(key);
  std::string to;
  for (const auto& m : c.masters()) {
    if (m != from) to = m;
  }
  auto id_of = [&](const std::string& a) {
    return admin.command_at(a, {"CLUSTER", "MYID"}).value().text;
  };
  const std::string from_id = id_of(from), to_id = id_of(to);
  ASSERT_FALSE(
      admin.command_at(to, {"CLUSTER", "SETSLOT", slot, "IMPORTING", from_id}).value().error);
  ASSERT_FALSE(
      admin.command_at(from, {"CLUSTER", "SETSLOT", slot, "MIGRATING", to_id}).value().error);
  const std::string to_port = to.substr(to.rfind(':') + 1);
  auto mig = admin.command_at(from, {"MIGRATE", "127.0.0.1", to_port, key, "0", "5000"});
  ASSERT_TRUE(mig.is_ok());
  ASSERT_FALSE(mig.value().error) << mig.value().text;

  std::vector<unsigned char> dst(bytes.size());
  FetchResult r = c.fetch({Key{77, 300}, 3, 0x1a}, dst);
  ASSERT_EQ(r.outcome, FetchOutcome::kHit) << r.detail;
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), dst.begin()));
  EXPECT_EQ(c.stats().ask, 1u);
  EXPECT_EQ(c.stats().moved, 0u);

  for (const auto& m : c.masters()) {
    ASSERT_FALSE(admin.command_at(m, {"CLUSTER", "SETSLOT", slot, "NODE", to_id}).value().error);
  }
  std::fill(dst.begin(), dst.end(), 0);
  r = c.fetch({Key{77, 300}, 3, 0x1a}, dst);
  ASSERT_EQ(r.outcome, FetchOutcome::kHit) << r.detail;
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), dst.begin()));
  EXPECT_EQ(c.stats().moved, 1u);
  EXPECT_EQ(c.owner_of(key), to);
}

TEST(RemoteCluster, AWrongPasswordFailsWithoutNamingIt) {
  RemoteConfig config = cluster().config();
  config.password = "s3cret-never-logged";
  RemoteClient c(config);
  Status s = c.connect();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("AUTH"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("s3cret"), std::string::npos) << s.message();
}

// requirepass and an ACL user, set on every node for this test and removed after it.
TEST(RemoteCluster, AuthenticatesWithRequirepassOrAnAclUser) {
  auto admin_client = connected();
  RemoteClient& admin = *admin_client;  // authenticated before the password is set: stays so
  std::vector<std::string> nodes;
  for (int i = 0; i < 6; ++i)
    nodes.push_back("127.0.0.1:" + std::to_string(cluster().base_port + i));
  auto on_all = [&](const std::vector<std::string>& argv) {
    for (const auto& n : nodes) {
      auto r = admin.command_at(n, argv);
      ASSERT_TRUE(r.is_ok() && !r.value().error) << n << ": " << (r ? r.value().text : "");
    }
  };
  on_all({"CONFIG", "SET", "masterauth", "pw-one"});
  on_all({"CONFIG", "SET", "requirepass", "pw-one"});
  on_all({"ACL", "SETUSER", "tkv", "on", ">pw-two", "~*", "+@all"});

  const auto bytes = pattern(70000, 21);
  {
    RemoteClient anonymous(cluster().config());
    EXPECT_FALSE(anonymous.connect().is_ok());  // CLUSTER SLOTS refused without AUTH
  }
  RemoteConfig with_pass = cluster().config();
  with_pass.password = "pw-one";
  RemoteClient c(with_pass);
  ASSERT_TRUE(c.connect().is_ok());
  ASSERT_TRUE(c.put(identity(400), bytes).is_ok());
  RemoteConfig as_user = cluster().config();
  as_user.user = "tkv";
  as_user.password = "pw-two";
  RemoteClient u(as_user);
  ASSERT_TRUE(u.connect().is_ok());
  std::vector<unsigned char> dst(bytes.size());
  FetchResult r = u.fetch({Key{77, 400}, 3, 0x1a}, dst);
  EXPECT_EQ(r.outcome, FetchOutcome::kHit) << r.detail;
  EXPECT_TRUE(std::ranges::equal(dst, bytes));

  on_all({"ACL", "DELUSER", "tkv"});
  on_all({"CONFIG", "SET", "requirepass", ""});
  on_all({"CONFIG", "SET", "masterauth", ""});
}

TEST(RemoteCluster, AFullClusterEvictsAndPutsNeverFail) {
  auto client = connected();
  RemoteClient& c = *client;
  const size_t object = 1 << 20;
  const uint64_t count = 260;  // 260 MiB over three masters of 64 MiB each
  for (uint64_t h = 0; h < count; ++h) {
    Status s = c.put(identity(10000 + h), pattern(object, h));
    ASSERT_TRUE(s.is_ok()) << s.to_string();
  }
  auto evicted = c.evicted_keys();
  ASSERT_TRUE(evicted.is_ok()) << evicted.status().to_string();
  EXPECT_GT(evicted.value(), 0u);
  std::vector<unsigned char> dst(object);
  uint64_t hits = 0, absent = 0;
  for (uint64_t h = 0; h < count; ++h) {
    FetchResult r = c.fetch({Key{77, 10000 + h}, 3, 0x1a}, dst);
    ASSERT_TRUE(r.outcome == FetchOutcome::kHit || r.outcome == FetchOutcome::kAbsent)
        << fetch_outcome_name(r.outcome) << " " << r.detail;
    (r.hit() ? hits : absent) += 1;
    if (r.hit()) {
      const auto want = pattern(object, h);
      ASSERT_TRUE(std::equal(want.begin(), want.end(), dst.begin()));
    }
  }
  EXPECT_GT(hits, 0u);
  EXPECT_GT(absent, 0u);
  EXPECT_EQ(c.stats().put_oom + c.stats().put_failed, 0u);
}

}  // namespace
}  // namespace tempokv::remote
