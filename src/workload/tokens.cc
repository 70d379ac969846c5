#include "workload/tokens.h"

#include <cstring>

#include "common/model_geometry.h"
#include "common/splitmix.h"

namespace tempokv {

void append_synthetic_tokens(uint64_t seed, size_t count, std::vector<uint32_t>& out,
                             uint32_t vocab) {
  uint64_t s = seed ^ 0x746f6b656e73ULL;  // "tokens": a seed of 0 still gives a stream
  out.reserve(out.size() + count);
  for (size_t i = 0; i < count; ++i) {
    out.push_back(static_cast<uint32_t>(splitmix64(s) % (vocab ? vocab : 1)));
  }
}

std::vector<CachedChunk> chunk_prefix(std::string_view model, std::span<const uint32_t> tokens,
                                      uint32_t chunk_tokens, uint64_t kv_bytes_per_token) {
  std::vector<CachedChunk> chunks;
  if (chunk_tokens == 0) return chunks;
  const uint64_t mid = model_id(model);
  uint64_t prev = 0;
  for (size_t begin = 0; begin + chunk_tokens <= tokens.size(); begin += chunk_tokens) {
    prev = chain_hash(prev, tokens.subspan(begin, chunk_tokens));
    chunks.push_back(
        {Key{mid, prev}, uint64_t(chunk_tokens) * kv_bytes_per_token,
         TokenRange{static_cast<uint32_t>(begin), static_cast<uint32_t>(begin + chunk_tokens)}});
  }
  return chunks;
}

Result<uint64_t> resolve_kv_bytes_per_token(std::string_view model, uint64_t configured) {
  if (configured != 0) return configured;
  TEMPOKV_ASSIGN_OR_RETURN(ModelGeometry g, find_model_geometry(model));
  return g.bytes_per_token();
}

void fill_chunk_bytes(const Key& key, std::span<std::byte> out) {
  uint64_t s = key.hash ^ (key.model * 0x2545f4914f6cdd1dULL);
  size_t i = 0;
  for (; i + 8 <= out.size(); i += 8) {
    uint64_t v = splitmix64(s);
    std::memcpy(out.data() + i, &v, 8);
  }
  uint64_t v = splitmix64(s);
  for (; i < out.size(); ++i, v >>= 8) out[i] = static_cast<std::byte>(v & 0xff);
}

bool chunk_bytes_match(const Key& key, std::span<const std::byte> bytes) {
  uint64_t s = key.hash ^ (key.model * 0x2545f4914f6cdd1dULL);
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    const uint64_t want = splitmix64(s);
    uint64_t got;
    std::memcpy(&got, bytes.data() + i, 8);
    if (got != want) return false;
  }
  uint64_t v = splitmix64(s);
  for (; i < bytes.size(); ++i, v >>= 8) {
    if (bytes[i] != static_cast<std::byte>(v & 0xff)) return false;
  }
  return true;
}

uint32_t Request::true_output_tokens() const {
  uint32_t n = output_tokens < max_output_tokens ? output_tokens : max_output_tokens;
  return n > 0 ? n : 1;
}

uint64_t Request::chunk_bytes(size_t n) const {
  uint64_t sum = 0;
  for (size_t i = 0; i < n && i < chunks.size(); ++i) sum += chunks[i].bytes;
  return sum;
}

}  // namespace tempokv
