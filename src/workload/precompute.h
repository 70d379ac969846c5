// Precomputing a workload's reusable KV into the store before a run (paper §5.1: "we retain
// precomputed KV on SSD"): every request's first precomputed_chunks chunks are put once (keys
// already in the store are skipped). Simulated mode puts sizes only; real mode puts the
// deterministic content of fill_chunk_bytes(key), so restores can be checked against it.
//
// Asynchronous on the store's Executor; `done` runs there when every put is durable (or with the
// first error). At most max_in_flight puts are outstanding, which bounds real mode's buffers.
// Call from the Executor's thread (or before its loop runs).
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "store/store.h"
#include "workload/request.h"

namespace tempokv {

struct PrecomputeOptions {
  bool write_bytes = false;    // real mode: write fill_chunk_bytes content (else sizes only)
  uint32_t max_in_flight = 8;  // puts outstanding at once
};

struct PrecomputeStats {
  uint64_t chunks = 0;   // chunks put
  uint64_t bytes = 0;    // payload bytes put
  uint64_t skipped = 0;  // chunks already in the store (or repeated in the workload)
};

void precompute_kv(Store& store, std::span<const Request> requests,
                   const PrecomputeOptions& options,
                   std::function<void(Result<PrecomputeStats>)> done);

}  // namespace tempokv
