// Synthetic token ids and chunk keys (DESIGN.md §2 Workloads): deterministic token ids drawn from a
// seed, so equal seeds give equal prompts and equal prefixes give equal chunk keys; the chunking
// of a prompt into whole chunks keyed by {model_id(model), chain_hash(previous, tokens)}; and the
// deterministic KV payload of a chunk derived from its key (what real mode writes and verifies).
//
// Free functions over values; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tempokv/key.h"
#include "tempokv/status.h"
#include "workload/request.h"

namespace tempokv {

inline constexpr uint32_t kDefaultChunkTokens = 256;
inline constexpr uint32_t kDefaultVocab = 128'256;  // Llama 3 vocabulary size

// Appends `count` token ids in [0, vocab) drawn from `seed` to out.
void append_synthetic_tokens(uint64_t seed, size_t count, std::vector<uint32_t>& out,
                             uint32_t vocab = kDefaultVocab);

// The whole chunks of tokens[0, tokens.size()) (a final partial chunk is left out), keyed by the
// chained hash from the first chunk, with chunk_tokens × kv_bytes_per_token bytes each.
std::vector<CachedChunk> chunk_prefix(std::string_view model, std::span<const uint32_t> tokens,
                                      uint32_t chunk_tokens, uint64_t kv_bytes_per_token);

// KV bytes per token of a model: `configured` when non-zero, else from the geometry table
// (common/model_geometry.h); NotFound names the known models.
Result<uint64_t> resolve_kv_bytes_per_token(std::string_view model, uint64_t configured);

// Deterministic chunk content derived from the key: real mode puts it and checks restores by it.
void fill_chunk_bytes(const Key& key, std::span<std::byte> out);
// Whether `bytes` is that content, read once and never copied (a check without a store).
bool chunk_bytes_match(const Key& key, std::span<const std::byte> bytes);

}  // namespace tempokv
