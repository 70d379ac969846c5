// Key and TokenRange: how a KV chunk is named.
//
// A Key is 128 bits: the model id (XXH3-64 of the model name) and the chained prefix hash of the
// chunk (the hash of the chunk's tokens seeded with the previous chunk's hash, as LMCache and vLLM
// do), so equal prefixes of the same model give equal keys. Values; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tempokv {

struct Key {
  uint64_t model = 0;  // model id
  uint64_t hash = 0;   // chained prefix hash of the chunk

  auto operator<=>(const Key&) const = default;
  // 32 lowercase hex digits, model first.
  std::string to_string() const;
  static std::optional<Key> parse(std::string_view hex);
};

// Tokens [begin, end) of the prompt that a chunk covers.
struct TokenRange {
  uint32_t begin = 0;
  uint32_t end = 0;
  uint32_t size() const { return end - begin; }
  auto operator<=>(const TokenRange&) const = default;
};

uint64_t model_id(std::string_view model_name);
// Hash of one chunk's token ids chained on the previous chunk's hash (0 for the first chunk).
uint64_t chain_hash(uint64_t previous, std::span<const uint32_t> tokens);

}  // namespace tempokv

template <>
struct std::hash<tempokv::Key> {
  size_t operator()(const tempokv::Key& k) const noexcept {
    return static_cast<size_t>(k.hash ^ (k.model * 0x9e3779b97f4a7c15ULL));
  }
};
