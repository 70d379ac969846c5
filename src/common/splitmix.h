// splitmix64: the one seeded generator of the code base (synthetic tokens and workloads, step
// jitter, bench payloads, test draws). The same seed gives the same sequence on any platform;
// not for anything that must be unpredictable. Header-only; the state is the caller's.
#pragma once

#include <cstdint>

namespace tempokv {

// splitmix64's output function: a bijection of 64-bit values that scatters neighbouring inputs.
constexpr uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The next value of the sequence of `state` (which advances).
constexpr uint64_t splitmix64(uint64_t& state) {
  return splitmix64_mix(state += 0x9e3779b97f4a7c15ULL);
}

// A uniform double in [0, 1) from the sequence of `state`.
constexpr double uniform01(uint64_t& state) {
  return static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
}

}  // namespace tempokv
