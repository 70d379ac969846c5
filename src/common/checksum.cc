#include "common/checksum.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t's definition, to hold it inside Xxh3Stream
#include <xxhash.h>

#include "common/checksum_avx2.h"

namespace tempokv {
namespace {

static_assert(sizeof(XXH3_state_t) <= sizeof(unsigned char[640]) && alignof(XXH3_state_t) <= 64,
              "Xxh3Stream::state_ is too small for this xxhash.h's XXH3_state_t");

bool use_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool yes = detail::xxh3_avx2_built() && __builtin_cpu_supports("avx2");
  return yes;
#else
  return false;
#endif
}

Hash128 from(XXH128_hash_t h) { return {h.low64, h.high64}; }

}  // namespace

Hash128 xxh3_128(const void* data, size_t bytes) {
  if (!use_avx2()) return from(XXH3_128bits(data, bytes));
  uint64_t h[2];
  detail::xxh3_avx2_hash(data, bytes, h);
  return {h[0], h[1]};
}

std::string_view xxh3_variant() { return use_avx2() ? "avx2" : "libxxhash"; }

Xxh3Stream::Xxh3Stream() {
  if (use_avx2()) {
    detail::xxh3_avx2_reset(state_);
  } else {
    XXH3_128bits_reset(reinterpret_cast<XXH3_state_t*>(state_));
  }
}

void Xxh3Stream::update(const void* data, size_t bytes) {
  if (use_avx2()) {
    detail::xxh3_avx2_update(state_, data, bytes);
  } else {
    XXH3_128bits_update(reinterpret_cast<XXH3_state_t*>(state_), data, bytes);
  }
}

Hash128 Xxh3Stream::digest() const {
  if (!use_avx2()) return from(XXH3_128bits_digest(reinterpret_cast<const XXH3_state_t*>(state_)));
  uint64_t h[2];
  detail::xxh3_avx2_digest(state_, h);
  return {h[0], h[1]};
}

}  // namespace tempokv
