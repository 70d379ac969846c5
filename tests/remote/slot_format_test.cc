#include <gtest/gtest.h>

#include "remote/remote_client.h"
#include "remote/slot.h"
#include "remote/value_format.h"

namespace tempokv::remote {
namespace {

TEST(Slot, Crc16MatchesTheReferenceVector) { EXPECT_EQ(crc16_xmodem("123456789"), 0x31C3); }

TEST(Slot, HashTagRoutesByTheTextInsideTheFirstBraces) {
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("user1000"));
  EXPECT_EQ(key_slot("a{b}c{d}"), key_slot("b"));
  // An empty tag is no tag: the whole key is hashed.
  EXPECT_EQ(key_slot("foo{}{bar}"), crc16_xmodem("foo{}{bar}") % kSlots);
  EXPECT_EQ(key_slot("foo{bar"), crc16_xmodem("foo{bar") % kSlots);
}

RemoteIdentity sample() {
  RemoteIdentity id;
  id.key = Key{0x1122334455667788ull, 0x99aabbccddeeff00ull};
  id.generation = 42;
  id.payload_bytes = 12345;
  id.checksum = Hash128{7, 8};
  id.layout_digest = 0xabcdef;
  id.tokens = {256, 0xfffffff0u};  // both halves of the field, the high bit of end included
  return id;
}

TEST(ValueFormat, HeaderRoundTripsTheIdentity) {
  const HeaderBytes h = encode_header(sample());
  auto back = decode_header(h.data());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, sample());
}

TEST(ValueFormat, AnyFlippedHeaderByteIsRejected) {
  const HeaderBytes good = encode_header(sample());
  for (size_t i = 0; i < kHeaderBytes; ++i) {
    HeaderBytes h = good;
    h[i] ^= 0x01;
    EXPECT_FALSE(decode_header(h.data()).has_value()) << "byte " << i;
  }
}

TEST(ValueFormat, ObjectKeyIsOneHashTag) {
  const Key k{1, 2};
  EXPECT_EQ(object_key(k), "tkv:{" + k.to_string() + "}");
  EXPECT_EQ(key_slot(object_key(k)), key_slot(k.to_string()));
}

}  // namespace
}  // namespace tempokv::remote

namespace tempokv::remote {
namespace {

// The seeds tempokvd's configuration accepts (HOST:PORT, [V6]:PORT) are the client's too.
TEST(RemoteConfigSeeds, HostPortAndBracketedIpv6AreAccepted) {
  RemoteConfig c;
  c.seeds = {"127.0.0.1:7000", "[::1]:7001", "redis-a:7002"};
  EXPECT_TRUE(c.validate().is_ok()) << c.validate().to_string();
  for (const char* bad : {"127.0.0.1", "127.0.0.1:0", ":7000", "127.0.0.1:70000"}) {
    c.seeds = {bad};
    EXPECT_FALSE(c.validate().is_ok()) << bad;
  }
}

}  // namespace
}  // namespace tempokv::remote
