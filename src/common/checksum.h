// XXH3-128 (the store's payload checksum) at the widest vector width the CPU runs: AVX2 where the
// CPU has it, else the system libxxhash (Debian builds it for baseline x86-64, SSE2). The hash is
// the same on every path; only the speed differs, which matters because every get verifies
// (bench/checksum_bench on this project's VM, AMD EPYC, busy: 1.75x in cache, 1.1x from DRAM; the
// store bench's CPU per GB read and verified fell from 0.14 to 0.105 core-s).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tempokv {

struct Hash128 {
  uint64_t low = 0;
  uint64_t high = 0;
  bool operator==(const Hash128&) const = default;
};

Hash128 xxh3_128(const void* data, size_t bytes);

// The implementation xxh3_128 and Xxh3Stream use: "avx2" or "libxxhash".
std::string_view xxh3_variant();

// Incremental XXH3-128: update() over consecutive pieces gives xxh3_128 of their concatenation.
class Xxh3Stream {
 public:
  Xxh3Stream();
  Xxh3Stream(const Xxh3Stream&) = delete;
  Xxh3Stream& operator=(const Xxh3Stream&) = delete;
  void update(const void* data, size_t bytes);
  Hash128 digest() const;

 private:
  // XXH3_state_t (xxhash.h, 576 bytes at 64-byte alignment); checksum.cc checks the size.
  alignas(64) unsigned char state_[640];
};

}  // namespace tempokv
