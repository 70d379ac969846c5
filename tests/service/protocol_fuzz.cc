// libFuzzer target: decode_request and decode_server_message on arbitrary bytes must return
// (a value or InvalidArgument) without crashing, leaking or reading out of bounds, and every
// request they accept must re-encode to bytes that decode to the same op.
// Build and run: scripts/fuzz-protocol [seconds]
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "tempokv/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tempokv;
  using namespace tempokv::service;
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  std::optional<uint64_t> id;
  Result<Request> r = decode_request(bytes, &id);
  if (r.is_ok()) {
    if (!id || *id != r->id) std::abort();
    std::vector<std::byte> again = encode_request(*r);
    Result<Request> r2 = decode_request(again);
    if (!r2.is_ok() || r2->id != r->id || r2->op.index() != r->op.index()) std::abort();
  } else if (r.status().code() != StatusCode::kInvalidArgument) {
    std::abort();
  }
  Result<ServerMessage> s = decode_server_message(bytes);
  if (!s.is_ok() && s.status().code() != StatusCode::kInvalidArgument) std::abort();
  return 0;
}
