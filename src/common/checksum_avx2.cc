// XXH3 compiled for AVX2 (this file alone gets -mavx2). XXH_INLINE_ALL makes xxhash.h's functions
// static to this file; see checksum_avx2.h for why nothing else is included.
#include "common/checksum_avx2.h"

#if defined(__AVX2__)
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace tempokv::detail {

bool xxh3_avx2_built() { return true; }

void xxh3_avx2_hash(const void* data, size_t bytes, uint64_t out[2]) {
  XXH128_hash_t h = XXH3_128bits(data, bytes);
  out[0] = h.low64;
  out[1] = h.high64;
}

void xxh3_avx2_reset(void* state) { XXH3_128bits_reset(static_cast<XXH3_state_t*>(state)); }

void xxh3_avx2_update(void* state, const void* data, size_t bytes) {
  XXH3_128bits_update(static_cast<XXH3_state_t*>(state), data, bytes);
}

void xxh3_avx2_digest(const void* state, uint64_t out[2]) {
  XXH128_hash_t h = XXH3_128bits_digest(static_cast<const XXH3_state_t*>(state));
  out[0] = h.low64;
  out[1] = h.high64;
}

}  // namespace tempokv::detail
#else
namespace tempokv::detail {
bool xxh3_avx2_built() { return false; }
void xxh3_avx2_hash(const void*, size_t, uint64_t out[2]) { out[0] = out[1] = 0; }
void xxh3_avx2_reset(void*) {}
void xxh3_avx2_update(void*, const void*, size_t) {}
void xxh3_avx2_digest(const void*, uint64_t out[2]) { out[0] = out[1] = 0; }
}  // namespace tempokv::detail
#endif
