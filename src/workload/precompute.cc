#include "workload/precompute.h"

#include <memory>
#include <unordered_set>
#include <vector>

#include "common/aligned_buffer.h"
#include "workload/tokens.h"

namespace tempokv {
namespace {

// The state of one precompute run; it keeps itself alive through the put callbacks.
struct Run : std::enable_shared_from_this<Run> {
  Store* store = nullptr;
  PrecomputeOptions options;
  std::vector<CachedChunk> todo;
  size_t next = 0;
  uint32_t in_flight = 0;
  bool failed = false;
  PrecomputeStats stats;
  std::function<void(Result<PrecomputeStats>)> done;

  void pump() {
    while (!failed && in_flight < options.max_in_flight && next < todo.size()) {
      const CachedChunk c = todo[next++];
      std::shared_ptr<AlignedBuffer> buf;
      if (options.write_bytes) {
        auto b = AlignedBuffer::allocate(c.bytes);
        if (!b.is_ok()) return fail(b.status());
        buf = std::make_shared<AlignedBuffer>(std::move(b).value());
        fill_chunk_bytes(c.key, std::span<std::byte>(buf->data(), c.bytes));
      }
      ++in_flight;
      auto self = shared_from_this();
      store->put(c.key, c.tokens, buf ? buf->data() : nullptr, c.bytes,
                 [self, buf, bytes = c.bytes](Status st) {
                   --self->in_flight;
                   if (!st.is_ok()) return self->fail(st);
                   ++self->stats.chunks;
                   self->stats.bytes += bytes;
                   self->pump();
                 });
    }
    if (!failed && in_flight == 0 && next == todo.size() && done) {
      auto cb = std::move(done);
      cb(stats);
    }
  }
  void fail(const Status& st) {
    if (failed) return;
    failed = true;
    if (done) {
      auto cb = std::move(done);
      cb(Status(st.code(), "precompute: " + st.message()));
    }
  }
};

}  // namespace

void precompute_kv(Store& store, std::span<const Request> requests,
                   const PrecomputeOptions& options,
                   std::function<void(Result<PrecomputeStats>)> done) {
  auto run = std::make_shared<Run>();
  run->store = &store;
  run->options = options;
  if (run->options.max_in_flight == 0) run->options.max_in_flight = 1;
  run->done = std::move(done);
  std::unordered_set<Key> seen;
  for (const Request& r : requests) {
    for (uint32_t i = 0; i < r.precomputed_chunks && i < r.chunks.size(); ++i) {
      const CachedChunk& c = r.chunks[i];
      if (!seen.insert(c.key).second || store.contains(c.key)) {
        ++run->stats.skipped;
        continue;
      }
      run->todo.push_back(c);
    }
  }
  run->pump();
}

}  // namespace tempokv
