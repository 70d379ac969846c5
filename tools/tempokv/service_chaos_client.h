// The chaos test's client side (service_chaos.h): payloads anyone can check from their key, a
// claim staged and its bytes compared with what was put, and the forked client process that puts
// and claims until its deadline, reporting each step on a pipe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "service_chaos.h"
#include "tempokv/client.h"

namespace tempokv::cli::chaos {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kModel = 0xC4A05;

// The bytes put under key hash `hash`: a function of the hash alone, so anyone can check them.
std::vector<std::byte> chaos_payload(uint64_t hash, uint64_t base_bytes);

// The value of counter `name` in `s` (0 when absent).
double stat(const service::StatList& s, const std::string& name);

// A client of `endpoint` named `name`, with 5 s call and lookup timeouts.
ClientOptions client_options(const std::string& endpoint, const std::string& name);

// Stages claim `id` of `m` and compares its bytes with what was put: OK when equal,
// Corruption when not, any other error when the claim did not become ready. `in_transfer` is
// called between begin_transfer and end_transfer.
Status stage_and_check(ServiceClient& c, uint64_t id, const std::vector<ManifestEntry>& m,
                       uint64_t object_bytes, const std::function<void()>& in_transfer);

// A client process: puts objects and stages claims of its own acknowledged ones until the
// deadline, telling the parent each step on `out` (one line each). Returns the exit code.
int run_worker(const std::string& endpoint, uint64_t worker, const ChaosOptions& o,
               Clock::time_point deadline, int out);

}  // namespace tempokv::cli::chaos
