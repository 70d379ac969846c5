// must(): a benchmark's setup aborts with the error's message (benchmarks measure, never assert).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "tempokv/status.h"

namespace tempokv::bench {

template <typename T>
T must(Result<T> r) {
  if (!r.is_ok()) {
    std::fprintf(stderr, "bench: %s\n", r.status().to_string().c_str());
    std::abort();
  }
  return std::move(r).value();
}
inline void must(const Status& s) {
  if (!s.is_ok()) {
    std::fprintf(stderr, "bench: %s\n", s.to_string().c_str());
    std::abort();
  }
}

}  // namespace tempokv::bench
