// Claims as a runtime names them (DESIGN.md §3): the manifest of KV objects a request will
// retrieve, and the answers to a retrieval request. Shared by the in-process adapter, the
// controller and provider that implement claims, and the client and wire protocol that carry
// them (include/tempokv/runtime_api.h, protocol.h). Values; thread-safe as values.
#pragma once

#include <cstdint>
#include <functional>

#include "tempokv/key.h"
#include "tempokv/status.h"

namespace tempokv {

using ClaimId = uint64_t;  // a claim is named by its request's id

struct ManifestEntry {
  Key key;
  uint64_t bytes = 0;  // payload bytes of the object in the store
};

enum class RetrievalAnswer {
  kReady,          // stage-ready now: begin the transfer
  kOrdinaryReady,  // ordinary path, every object already resident and held: begin the transfer
  kWait,           // the callback reports when the transfer may begin (or the error)
};
enum class RetrievalPath { kStaged, kOrdinary };
using RetrievalCallback = std::function<void(ClaimId, Result<RetrievalPath>)>;

}  // namespace tempokv
