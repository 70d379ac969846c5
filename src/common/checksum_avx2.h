// XXH3-128 built for AVX2 (checksum_avx2.cc): only checksum.cc calls these, and only where the CPU
// has AVX2. Plain types only, so that checksum_avx2.cc includes no header with inline C++ code: an
// inline function compiled there with -mavx2 could be the copy the linker keeps for every caller.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tempokv::detail {

bool xxh3_avx2_built();  // false where the compiler had no -mavx2
void xxh3_avx2_hash(const void* data, size_t bytes, uint64_t out[2]);
void xxh3_avx2_reset(void* state);
void xxh3_avx2_update(void* state, const void* data, size_t bytes);
void xxh3_avx2_digest(const void* state, uint64_t out[2]);

}  // namespace tempokv::detail
