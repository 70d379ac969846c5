#include "engine/kv_writer.h"

#include "common/aligned_buffer.h"
#include "workload/tokens.h"

namespace tempokv {

KvWriter::~KvWriter() = default;

void KvWriter::write_produced(const Request& r, size_t from) {
  for (size_t i = from; i < r.chunks.size(); ++i) {
    const CachedChunk& c = r.chunks[i];
    if (pending_.count(c.key) || store_.contains(c.key)) {
      ++stats_.skipped;
      continue;
    }
    std::shared_ptr<AlignedBuffer> buf;
    if (write_bytes_) {
      auto b = AlignedBuffer::allocate(c.bytes);
      if (!b.is_ok()) {
        ++stats_.failures;
        continue;
      }
      buf = std::make_shared<AlignedBuffer>(std::move(b).value());
      fill_chunk_bytes(c.key, std::span<std::byte>(buf->data(), c.bytes));
    }
    pending_.insert(c.key);
    ++stats_.in_flight;
    std::weak_ptr<int> alive = alive_;
    store_.put(c.key, c.tokens, buf ? buf->data() : nullptr, c.bytes,
               [this, alive, buf, key = c.key, bytes = c.bytes](Status st) {
                 if (alive.expired()) return;
                 pending_.erase(key);
                 --stats_.in_flight;
                 if (st.is_ok()) {
                   ++stats_.puts;
                   stats_.bytes += bytes;
                 } else {
                   ++stats_.failures;
                 }
               });
  }
}

}  // namespace tempokv
