// The Mooncake FAST'25 trace format (DESIGN.md §2 Workloads; shared/traces/README.md) and its
// replay as Requests. One JSON object per line: timestamp (ms from the first request),
// input_length and output_length (tokens), hash_ids (prefix block hashes, block_tokens per block,
// the last block possibly partial; equal ids mean a reusable prefix block).
//
// Replay: records in a window [start, start + duration) of trace time, arrivals re-based to the
// window start and multiplied by time_scale; each block is split into block_tokens / chunk_tokens
// store chunks whose keys depend only on (hash id, position in the block), so a block seen by an
// earlier request has the same keys in a later one. Nothing is precomputed: a request's prefix hit
// is whatever earlier prefills have written to the store (writes_kv is true).
//
// Free functions over values; thread-safe.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tempokv/executor.h"
#include "tempokv/status.h"
#include "workload/request.h"

namespace tempokv {

struct TraceRecord {
  double timestamp_ms = 0;
  uint32_t input_length = 0;   // prompt tokens
  uint32_t output_length = 0;  // true output tokens
  std::vector<uint64_t> hash_ids;
};

// One line; errors name origin and the 1-based line number.
Result<TraceRecord> parse_trace_line(std::string_view line, std::string_view origin,
                                     size_t line_no);
// Every non-blank line of a stream / file.
Result<std::vector<TraceRecord>> parse_trace(std::istream& in, std::string_view origin);
Result<std::vector<TraceRecord>> load_trace(const std::string& path);

struct TraceReplayOptions {
  std::string model = "llama-3.1-8b";       // keys and KV geometry
  uint64_t kv_bytes_per_token = 0;          // 0: from the model geometry table
  uint32_t block_tokens = 512;              // tokens per hash id (Mooncake: 512)
  uint32_t chunk_tokens = 256;              // store chunk size; divides block_tokens
  Duration window_start{};                  // trace time of the first record replayed
  std::optional<Duration> window_duration;  // unset: to the end of the trace
  double time_scale = 1.0;                  // arrival = (timestamp - window_start) × time_scale
  uint32_t max_output_tokens = 4096;        // generation limit; true output = min(output, limit)
  uint64_t first_id = 1;                    // ids in trace order
  uint64_t token_seed = 1;                  // seeds the synthetic tokens behind each hash id

  Status validate() const;
};

Result<std::vector<Request>> make_trace_requests(std::span<const TraceRecord> records,
                                                 const TraceReplayOptions& options);

}  // namespace tempokv
