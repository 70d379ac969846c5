// KvWriter: writes the KV a prefill produced into the store (trace replay: a block first computed
// by one request becomes a hit for later ones), sharing the SSD with staging reads. Shared by the
// engines of one store. A chunk is written once: chunks already in the store or being written are
// skipped. Real mode writes fill_chunk_bytes(key) content, like the precompute.
//
// Threading: Executor thread only; put callbacks run there.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_set>

#include "store/store.h"
#include "workload/request.h"

namespace tempokv {

struct KvWriterStats {
  uint64_t puts = 0;       // completed
  uint64_t bytes = 0;      // payload bytes of completed puts
  uint64_t skipped = 0;    // chunks in the store or already being written
  uint64_t failures = 0;   // puts that failed (the chunk stays absent; a later prefill retries)
  uint64_t in_flight = 0;  // now
};

class KvWriter {
 public:
  KvWriter(Store& store, bool write_bytes) : store_(store), write_bytes_(write_bytes) {}
  ~KvWriter();
  KvWriter(const KvWriter&) = delete;
  KvWriter& operator=(const KvWriter&) = delete;

  // Writes r.chunks[from, end) that the store lacks.
  void write_produced(const Request& r, size_t from);
  KvWriterStats stats() const { return stats_; }

 private:
  Store& store_;
  bool write_bytes_;
  std::unordered_set<Key> pending_;
  KvWriterStats stats_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace tempokv
