// RuntimeSnapshot: what a serving runtime tells TempoKV about its scheduler, at an iteration
// boundary, for the time-to-use estimate (DESIGN.md §4). Only what a runtime sees: prompt sizes,
// progress and limits, never true output lengths. Values; thread-safe as values.
#pragma once

#include <cstdint>
#include <vector>

namespace tempokv {

// A request holding one of the runtime's slots.
struct RunningRequest {
  uint64_t id = 0;
  uint32_t context_tokens = 0;     // prompt tokens plus tokens generated so far
  uint32_t generated_tokens = 0;   // n; 0 until its prefill has produced the first token
  uint32_t max_output_tokens = 0;  // its generation limit
  // Work of its admission not yet done at this boundary (a request admitted in the iteration now
  // running has its retrieval and prefill in flight; a runtime reports the state after it).
  uint32_t prefill_tokens_left = 0;
  // With prefill_tokens_left > 0: KV bytes its retrieval moves in the iteration that runs that
  // prefill, and the time from now until that KV is ready (an admitted request waiting for its
  // staging holds its slot but joins no iteration before then).
  uint64_t cached_bytes = 0;
  uint64_t ready_in_ns = 0;
  // RuntimeSnapshot::async_loads only: its KV is loading (or loaded) and it holds no slot yet
  // (vLLM's WAITING_FOR_REMOTE_KVS). ready_in_ns is then the time until that KV is on the device
  // (0: it is); from then on it takes the first free slot, ahead of every waiting request.
  bool loading = false;
  // Preempted (its context recomputed) in the current episode of KV pressure, which has not
  // ended since: the runtime preempts a decoder once per episode (TtuEstimator).
  bool preempted = false;
};

// A request waiting for a slot, in the runtime's scheduling order.
struct WaitingRequest {
  uint64_t id = 0;
  uint32_t prompt_tokens = 0;      // whole prompt
  uint32_t cached_tokens = 0;      // matched prefix whose KV is retrieved, not computed
  uint64_t cached_bytes = 0;       // KV bytes of the matched prefix (retrieval size)
  uint32_t max_output_tokens = 0;  // its generation limit
  // Time from now until its matched KV is projected ready (0: ready, or no hit). A request ahead
  // of a target whose KV is not ready holds its slot without running (its known retrieval
  // dependency, the paper's §3.1); a target's own readiness is assumed.
  uint64_t ready_in_ns = 0;
  // RuntimeSnapshot::async_loads only: how long its KV's copy to the device takes once it is
  // ready (the copy runs outside the iterations).
  uint64_t load_ns = 0;
};

struct RuntimeSnapshot {
  std::vector<RunningRequest> running;
  std::vector<WaitingRequest> waiting;  // scheduling order: waiting[0] is admitted next
  uint32_t max_active = 4;              // slot limit (active sequences)
  uint64_t kv_capacity_tokens = 0;      // GPU KV cache: admission limit on held contexts (0: none)
  // Tokens one iteration computes (vLLM's max_num_batched_tokens: chunked prefill): each decoder
  // takes one, prefills share the rest a chunk each in admission order. 0: no budget, every
  // admitted prefill runs whole in one iteration (the emulated engine).
  uint32_t token_budget = 0;
  // The runtime loads KV asynchronously, as vLLM's KV connectors do ("loads hold no slot"): at a
  // boundary with a slot free it first admits the requests whose KV has arrived, then walks the
  // waiting order while a slot is free and the iteration's token budget lasts, starting the load
  // of each request with a hit (that is its use: the request then holds no slot and takes no
  // tokens, so the walk goes on) and admitting a request without one (it takes a slot). A load's
  // copy runs outside the iterations (RunningRequest::loading, WaitingRequest::load_ns).
  // false: the emulated engine's rule, an admitted request holds its slot and its retrieval runs
  // in the iteration of its prefill.
  bool async_loads = false;
  // Time from now to the iteration boundary it describes: the runtime adapter's own estimate of
  // the end of the iteration now running (its start, its batch, its calibrated costs).
  uint64_t boundary_in_ns = 0;
};

}  // namespace tempokv
