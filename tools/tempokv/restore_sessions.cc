#include "restore_sessions.h"

#include <algorithm>

#include "common/aligned_buffer.h"
#include "common/splitmix.h"
#include "common/units.h"

namespace tempokv::cli {
namespace {

// Incompressible, distinct per chunk: nothing below the store can dedupe or compress it away.
void fill_payload(std::byte* p, uint64_t bytes, uint64_t seed) {
  uint64_t state = seed;
  uint64_t words = bytes / 8;
  auto* w = reinterpret_cast<uint64_t*>(p);
  for (uint64_t i = 0; i < words; ++i) w[i] = splitmix64(state);
  for (uint64_t i = words * 8; i < bytes; ++i) p[i] = std::byte(splitmix64(state));
}

}  // namespace

uint64_t session_store_bytes(const SessionSpec& spec) {
  uint64_t chunks = (spec.tokens + spec.chunk_tokens - 1) / spec.chunk_tokens;
  // Each record: a 4 KiB header plus the payload rounded to 4 KiB.
  return spec.count * (chunks * kBlockBytes + round_up(spec.tokens * spec.bytes_per_token,
                                                       kBlockBytes) + chunks * kBlockBytes);
}

Result<std::vector<BenchSession>> write_sessions(RealExecutor& executor, Store& store,
                                                 const SessionSpec& spec,
                                                 const std::function<void(uint64_t)>& progress) {
  const uint64_t model = model_id(spec.model);
  const uint64_t max_chunk_bytes = uint64_t(spec.chunk_tokens) * spec.bytes_per_token;
  std::vector<AlignedBuffer> buffers;
  std::vector<bool> busy(spec.puts_in_flight, false);
  for (uint32_t i = 0; i < spec.puts_in_flight; ++i) {
    TEMPOKV_ASSIGN_OR_RETURN(AlignedBuffer b, AlignedBuffer::allocate(max_chunk_bytes));
    buffers.push_back(std::move(b));
  }
  Status first_error;
  uint64_t done_bytes = 0, missing = 0, chunks = 0;
  std::vector<BenchSession> sessions(spec.count);
  std::vector<uint32_t> tokens(spec.chunk_tokens);
  for (uint32_t s = 0; s < spec.count; ++s) {
    uint64_t prev = 0;
    // A distinct token stream per session (and per model): the prefixes never collide.
    uint64_t token_state = (uint64_t(s) + 1) * 0x100000001b3ULL ^ model;
    for (uint64_t begin = 0; begin < spec.tokens; begin += spec.chunk_tokens) {
      uint32_t n = uint32_t(std::min<uint64_t>(spec.chunk_tokens, spec.tokens - begin));
      for (uint32_t j = 0; j < n; ++j) tokens[j] = uint32_t(splitmix64(token_state) % 151936);
      prev = chain_hash(prev, std::span<const uint32_t>(tokens.data(), n));
      Key key{model, prev};
      ++chunks;
      uint64_t bytes = uint64_t(n) * spec.bytes_per_token;
      sessions[s].keys.push_back(key);
      sessions[s].payload_bytes += bytes;
      if (store.contains(key)) {
        done_bytes += bytes;
        continue;
      }
      if (!spec.write_missing) {
        ++missing;
        continue;
      }
      // Wait for a free buffer.
      size_t slot = 0;
      executor.run_until([&] {
        auto it = std::find(busy.begin(), busy.end(), false);
        slot = size_t(it - busy.begin());
        return it != busy.end();
      });
      if (!first_error.is_ok()) break;
      fill_payload(buffers[slot].data(), bytes, key.hash);
      busy[slot] = true;
      store.put(key, TokenRange{uint32_t(begin), uint32_t(begin + n)}, buffers[slot].data(), bytes,
                [&, slot, bytes](Status st) {
                  busy[slot] = false;
                  if (!st.is_ok() && first_error.is_ok()) first_error = st;
                  done_bytes += bytes;
                  if (progress) progress(done_bytes);
                });
    }
  }
  executor.run_until([&] { return std::none_of(busy.begin(), busy.end(), [](bool b) { return b; }); });
  if (!first_error.is_ok()) return first_error;
  if (missing > 0) {
    return Status::not_found(std::to_string(missing) + " of " + std::to_string(chunks) +
                             " session chunks (" + std::to_string(spec.chunk_tokens) +
                             " tokens each) are not in the store; --reuse only reads what an "
                             "earlier run with the same parameters wrote");
  }
  return sessions;
}

}  // namespace tempokv::cli
