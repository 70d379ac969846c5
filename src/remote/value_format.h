// The remote tier's value format (docs/cluster.md, "Identity"): one object is one Redis string,
// an 80-byte header carrying the object's identity followed by the payload. Pure functions, no
// I/O; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/checksum.h"
#include "tempokv/key.h"

namespace tempokv::remote {

inline constexpr size_t kHeaderBytes = 80;
inline constexpr uint32_t kMagic = 0x52564B54;  // "TKVR" little-endian
inline constexpr uint16_t kVersion = 1;

// The same identity an object has in the local store (src/store ObjectInfo).
struct RemoteIdentity {
  Key key;
  uint64_t generation = 0;     // sequence of the record that stored the bytes
  uint64_t payload_bytes = 0;  // exact length of the payload
  Hash128 checksum;            // XXH3-128 of the payload
  uint64_t layout_digest = 0;  // digest of the KV layout the bytes were written for (0: none)
  TokenRange tokens;           // the tokens the object covers, as in the store's index
  bool operator==(const RemoteIdentity&) const = default;
};

using HeaderBytes = std::array<unsigned char, kHeaderBytes>;

HeaderBytes encode_header(const RemoteIdentity& id);
// nullopt when the magic, version, header length or the header's own check is wrong.
std::optional<RemoteIdentity> decode_header(const unsigned char* bytes);

// The Redis key of an object: "tkv:{<32 hex digits>}" (the braces make the whole key the tag).
std::string object_key(const Key& key);

}  // namespace tempokv::remote
