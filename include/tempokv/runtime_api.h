// RuntimeApi: the calls a serving runtime makes to TempoKV, whichever side of a process boundary
// TempoKV is on. RuntimeAdapter (src/adapter/runtime_adapter.h) answers them in-process; ServiceClient
// (client.h) carries them to tempokvd over its socket (docs/protocol.md). A runtime written
// against RuntimeApi runs with either; the contract of each call is RuntimeAdapter's.
//
// Ownership: an implementation owns nothing of the caller's; callbacks passed to
// request_retrieval are kept until they run or the claim ends.
//
// Threading: not thread-safe; each implementation names the one thread it is called on.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tempokv/executor.h"   // Duration
#include "tempokv/key.h"
#include "tempokv/retrieval.h"  // ManifestEntry, RetrievalAnswer, RetrievalPath, RetrievalCallback
#include "tempokv/status.h"

namespace tempokv {

struct RequestInfo {
  uint64_t id = 0;
  uint32_t prompt_tokens = 0;
  uint32_t cached_tokens = 0;  // matched prefix (retrieved, not computed)
  uint64_t cached_bytes = 0;   // KV bytes of the matched prefix
  uint32_t max_output_tokens = 0;
};

class RuntimeApi {
 public:
  virtual ~RuntimeApi() = default;

  // A request entered the runtime's waiting queue (every request, hit or not).
  virtual Status add_request(const RequestInfo& request) = 0;
  // The request's matched prefix KV, in retrieval order: becomes a PLANNED claim.
  virtual Status report_hit(uint64_t id, std::vector<ManifestEntry> manifest) = 0;
  // The runtime's waiting order after a scheduling iteration; `boundary_in` is the time until
  // the iteration now running ends. Every implementation uses the same default.
  virtual Status update_order(std::span<const uint64_t> waiting,
                              Duration boundary_in = Duration::zero()) = 0;
  virtual Status iteration_started(std::span<const uint64_t> prefills,
                                   std::span<const uint64_t> decoders) = 0;
  virtual Status admitted(uint64_t id) = 0;
  virtual Status prefill_done(uint64_t id) = 0;
  virtual Status tokens_generated(uint64_t id, uint32_t total_generated) = 0;
  virtual Status finished(uint64_t id, uint32_t output_tokens) = 0;

  // kReady / kOrdinaryReady: begin the transfer now; kWait: on_ready reports when it may begin
  // (or why the claim failed).
  virtual Result<RetrievalAnswer> request_retrieval(uint64_t id, RetrievalCallback on_ready) = 0;
  virtual Status begin_transfer(uint64_t id) = 0;
  virtual Status end_transfer(uint64_t id) = 0;
  // One object of the claim has been copied to the device (progressive release).
  virtual Status object_transferred(uint64_t id, const Key& key) = 0;
  virtual Status cancel(uint64_t id) = 0;

  // The last TTU projected for a waiting request, where the implementation can see it.
  virtual Result<Duration> last_ttu(uint64_t id) const = 0;
};

}  // namespace tempokv
