// The paper's NarrativeQA-like workload (§5.1; DESIGN.md §2 Workloads), generated from a seed:
// documents in three length groups (four each by default, 16K-68K tokens), one short question per
// document, arrivals at a fixed interval, output capped at a generation limit with earlier natural
// ends, and a prefix cache ratio kept in whole chunks of the document. The question and a final
// partial chunk of the document are never cached.
//
// Everything comes from NarrativeQaOptions::seed: document and question lengths, token ids (so
// keys repeat across runs and policies), true output lengths and the request order.
// Free functions over values; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tempokv/executor.h"
#include "tempokv/status.h"
#include "workload/request.h"

namespace tempokv {

struct NarrativeQaOptions {
  uint64_t seed = 1;                   // every random choice of the set
  std::string model = "llama-3.1-8b";  // keys and KV geometry
  uint64_t kv_bytes_per_token = 0;     // 0: from the model geometry table
  uint32_t chunk_tokens = 256;         // store chunk size
  // Document length ranges [min, max] in tokens, one per group (prompt = document + question).
  std::vector<std::pair<uint32_t, uint32_t>> groups = {
      {16'000, 24'000}, {32'000, 44'000}, {56'000, 68'000}};
  uint32_t docs_per_group = 4;        // documents (= requests) per group
  uint32_t question_min_tokens = 20;  // question length range, uniform
  uint32_t question_max_tokens = 60;
  double cache_ratio = 1.0;  // prefix cache ratio of each document, in (0, 1]
  Duration interval = std::chrono::milliseconds(500);  // fixed arrival interval
  uint32_t max_output_tokens = 128;                    // generation limit
  uint32_t output_min_tokens = 100;  // true output length uniform in [min, max_output_tokens]
  // > 0: the true output length is lognormal instead (median output_median_tokens, log-σ this),
  // capped at max_output_tokens: a heavy tail the generation limit cuts.
  double output_log_sigma = 0;
  uint32_t output_median_tokens = 64;
  bool shuffle = true;              // seeded request order; false: group by group
  uint64_t first_id = 1;            // ids are first_id, first_id + 1, ... in arrival order

  // Rejects nonsense with a message naming the field.
  Status validate() const;
};

// The requests in arrival order. Chunks: every whole chunk of the document; precomputed_chunks:
// floor(ratio × document tokens / chunk) capped at the whole chunks. writes_kv is false (the paper
// keeps exactly the ratio's prefix on SSD).
Result<std::vector<Request>> make_narrativeqa(const NarrativeQaOptions& options);

}  // namespace tempokv
