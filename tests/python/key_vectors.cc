// Prints the chunk keys tempokv::chunk_prefix gives for a token sequence, one 32-hex-digit key
// per whole chunk, so tests/python/test_keys.py can check that Python's keys are the same.
//
//   key_vectors MODEL CHUNK_TOKENS < tokens (whitespace-separated decimal uint32)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "workload/tokens.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MODEL CHUNK_TOKENS < tokens\n", argv[0]);
    return 2;
  }
  const uint32_t chunk = static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10));
  std::vector<uint32_t> tokens;
  for (uint64_t t; std::cin >> t;) tokens.push_back(static_cast<uint32_t>(t));
  std::printf("%016llx\n", static_cast<unsigned long long>(tempokv::model_id(argv[1])));
  for (const auto& c : tempokv::chunk_prefix(argv[1], tokens, chunk, 1)) {
    std::printf("%s\n", c.key.to_string().c_str());
  }
  return 0;
}
