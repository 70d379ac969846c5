#include "tempokv/key.h"

#include <xxhash.h>

#include <cstdio>

namespace tempokv {

std::string Key::to_string() const {
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(model),
                static_cast<unsigned long long>(hash));
  return buf;
}

std::optional<Key> Key::parse(std::string_view hex) {
  if (hex.size() != 32) return std::nullopt;
  uint64_t parts[2] = {0, 0};
  for (size_t i = 0; i < 32; ++i) {
    char c = hex[i];
    uint64_t d;
    if (c >= '0' && c <= '9') d = static_cast<uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f') d = static_cast<uint64_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') d = static_cast<uint64_t>(c - 'A' + 10);
    else return std::nullopt;
    parts[i / 16] = (parts[i / 16] << 4) | d;
  }
  return Key{parts[0], parts[1]};
}

uint64_t model_id(std::string_view model_name) {
  return XXH3_64bits(model_name.data(), model_name.size());
}

uint64_t chain_hash(uint64_t previous, std::span<const uint32_t> tokens) {
  return XXH3_64bits_withSeed(tokens.data(), tokens.size_bytes(), previous);
}

}  // namespace tempokv
