// The sessions restore-bench restores: `count` unique prompts of `tokens` tokens, stored as chunk
// objects of `chunk_tokens` tokens (the last may be shorter), each keyed by the model id and the
// chained prefix hash of its tokens, holding bytes_per_token x tokens of pseudo-random KV bytes.
// Deterministic: the same spec gives the same keys and bytes, so --reuse finds them again.
// Runs on the Executor's thread (it drives the RealExecutor while puts are in flight).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "executor/real_executor.h"
#include "store/store.h"
#include "tempokv/key.h"

namespace tempokv::cli {

struct SessionSpec {
  std::string model;
  uint64_t bytes_per_token = 0;
  uint64_t tokens = 0;
  uint32_t chunk_tokens = 0;
  uint32_t count = 0;
  uint32_t puts_in_flight = 4;
  bool write_missing = true;  // false (--reuse, a read-only store): a missing chunk is an error
};

struct BenchSession {
  std::vector<Key> keys;  // chunk keys in prompt order
  uint64_t payload_bytes = 0;
};

uint64_t session_store_bytes(const SessionSpec& spec);  // bytes all sessions take in the store
// Writes the sessions (skipping chunks the store already holds); progress(bytes_done). Without
// spec.write_missing, NotFound when the store lacks any chunk.
Result<std::vector<BenchSession>> write_sessions(RealExecutor& executor, Store& store,
                                                 const SessionSpec& spec,
                                                 const std::function<void(uint64_t)>& progress);

}  // namespace tempokv::cli
