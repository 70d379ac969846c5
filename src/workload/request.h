// Request: one prompt of a workload as the emulated serving engine receives it (DESIGN.md §2
// Workloads). It carries everything the engine needs (sizes, the keys of its reusable chunks, its
// true output length) and the arrival offset from the start of the run.
//
// The true output length is the engine's secret: the runtime adapter only ever sees the generation
// limit and completed outputs. Values; thread-safe as values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tempokv/executor.h"
#include "tempokv/key.h"

namespace tempokv {

// One whole chunk of a prompt's reusable prefix: the store object that holds its KV.
struct CachedChunk {
  Key key;
  uint64_t bytes = 0;  // KV payload bytes (chunk tokens × KV bytes per token)
  TokenRange tokens;   // prompt tokens it covers
};

struct Request {
  uint64_t id = 0;             // unique across every engine that shares a controller
  Duration arrival{};          // offset from the start of the run
  std::string model;           // model name (keys use model_id(model))
  uint32_t prompt_tokens = 0;  // whole prompt, suffix included
  uint32_t suffix_tokens = 0;  // question / tail that is never cached (always computed)
  // Whole chunks of the prompt that may have KV in the store, in prompt order from token 0. The
  // engine's prefix lookup walks them and stops at the first miss.
  std::vector<CachedChunk> chunks;
  uint32_t precomputed_chunks = 0;  // leading chunks whose KV is put into the store before the run
  bool writes_kv = false;           // its prefill writes the KV of chunks the store lacks
  uint32_t output_tokens = 0;       // true output length (hidden from the adapter); >= 1
  uint32_t max_output_tokens = 0;   // generation limit the runtime knows

  // Tokens the request actually generates: min(output_tokens, max_output_tokens), at least 1.
  uint32_t true_output_tokens() const;
  // KV bytes of the first n chunks.
  uint64_t chunk_bytes(size_t n) const;
};

}  // namespace tempokv
