#include "remote/value_format.h"

#include <cstring>

namespace tempokv::remote {
namespace {

void put_u64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
uint64_t get_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

HeaderBytes encode_header(const RemoteIdentity& id) {
  HeaderBytes h{};
  unsigned char* p = h.data();
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(kMagic >> (8 * i));
  p[4] = kVersion & 0xff;
  p[5] = kVersion >> 8;
  p[6] = kHeaderBytes & 0xff;
  p[7] = kHeaderBytes >> 8;
  put_u64(p + 8, id.key.model);
  put_u64(p + 16, id.key.hash);
  put_u64(p + 24, id.generation);
  put_u64(p + 32, id.payload_bytes);
  put_u64(p + 40, id.checksum.low);
  put_u64(p + 48, id.checksum.high);
  put_u64(p + 56, id.layout_digest);
  put_u64(p + 64, uint64_t{id.tokens.begin} | (uint64_t{id.tokens.end} << 32));
  put_u64(p + 72, xxh3_128(p, 72).low);
  return h;
}

std::optional<RemoteIdentity> decode_header(const unsigned char* p) {
  uint32_t magic = 0;
  for (int i = 3; i >= 0; --i) magic = (magic << 8) | p[i];
  const uint16_t version = static_cast<uint16_t>(p[4] | (p[5] << 8));
  const uint16_t header_bytes = static_cast<uint16_t>(p[6] | (p[7] << 8));
  if (magic != kMagic || version != kVersion || header_bytes != kHeaderBytes) return std::nullopt;
  if (get_u64(p + 72) != xxh3_128(p, 72).low) return std::nullopt;
  RemoteIdentity id;
  id.key.model = get_u64(p + 8);
  id.key.hash = get_u64(p + 16);
  id.generation = get_u64(p + 24);
  id.payload_bytes = get_u64(p + 32);
  id.checksum.low = get_u64(p + 40);
  id.checksum.high = get_u64(p + 48);
  id.layout_digest = get_u64(p + 56);
  const uint64_t tokens = get_u64(p + 64);
  id.tokens = {static_cast<uint32_t>(tokens), static_cast<uint32_t>(tokens >> 32)};
  return id;
}

std::string object_key(const Key& key) { return "tkv:{" + key.to_string() + "}"; }

}  // namespace tempokv::remote
