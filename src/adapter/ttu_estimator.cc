#include "adapter/ttu_estimator.h"

#include <algorithm>

namespace tempokv {
namespace {

// A request holding a slot in the projection.
struct Slot {
  uint64_t context_tokens;
  uint32_t remaining_tokens;  // predicted tokens still to generate
  uint32_t prefill_tokens;    // > 0: its retrieval and prefill are still to run
  uint64_t retrieval_bytes;   // moved by that retrieval
  Duration ready_at;          // its prefill cannot run in an iteration that starts before this
  bool runs = false;          // scratch: its prefill runs in the iteration being projected
};

// The runtime's KV-capacity admission rule (as the engine's): the slots' contexts and the prompt
// fit, or nothing holds a slot.
bool kv_fits(const std::vector<Slot>& slots, uint32_t prompt_tokens, uint64_t capacity) {
  if (capacity == 0 || slots.empty()) return true;
  uint64_t used = prompt_tokens;
  for (const Slot& s : slots) used += s.context_tokens;
  return used <= capacity;
}

// Used when the queue can never move (a slot limit of zero).
constexpr Duration kNever = std::chrono::hours(24 * 365);

}  // namespace

std::vector<Duration> TtuEstimator::estimate(const RuntimeSnapshot& snap) const {
  const size_t n_waiting = snap.waiting.size();
  std::vector<Duration> ttu(n_waiting, kNever);
  if (n_waiting == 0 || snap.max_active == 0) return ttu;

  std::vector<Slot> slots;
  slots.reserve(std::max<size_t>(snap.max_active, snap.running.size()));
  for (const RunningRequest& r : snap.running) {
    uint32_t rem = predictor_.remaining(r.generated_tokens, r.max_output_tokens);
    if (r.prefill_tokens_left == 0 && rem == 0) continue;  // finishing at this boundary
    slots.push_back({r.context_tokens, std::max<uint32_t>(rem, r.prefill_tokens_left ? 1 : 0),
                     r.prefill_tokens_left, r.cached_bytes, Duration(int64_t(r.ready_in_ns))});
  }

  Duration t{static_cast<int64_t>(snap.boundary_in_ns)};
  size_t next = 0;
  while (next < n_waiting) {
    // Admissions at this boundary: the runtime asks for each one's KV now (its TTU).
    while (slots.size() < snap.max_active && next < n_waiting &&
           kv_fits(slots, snap.waiting[next].prompt_tokens, snap.kv_capacity_tokens)) {
      const WaitingRequest& w = snap.waiting[next];
      ttu[next] = t;
      slots.push_back({w.prompt_tokens, predictor_.total(w.max_output_tokens),
                       std::max<uint32_t>(1, w.prompt_tokens - w.cached_tokens), w.cached_bytes,
                       Duration(int64_t(w.ready_in_ns))});
      ++next;
    }
    if (next >= n_waiting) break;
    // The iteration starting at t: retrievals (one after another) and prefills of the admitted
    // requests whose KV is ready, and one decode step of the requests already decoding.
    Duration iteration{0};
    Duration blocked_until = Duration::max();  // earliest KV of a request that cannot run yet
    bool prefills = false;
    uint64_t decode_context = 0, decode_batch = 0;
    for (Slot& s : slots) {
      s.runs = false;
      if (s.prefill_tokens == 0) {
        decode_context += s.context_tokens;
        ++decode_batch;
      } else if (s.ready_at <= t) {
        s.runs = prefills = true;
        iteration += profile_.retrieval(s.retrieval_bytes) +
                     profile_.prefill(s.prefill_tokens, s.context_tokens - s.prefill_tokens);
      } else {
        blocked_until = std::min(blocked_until, s.ready_at);
      }
    }
    if (prefills) {
      if (decode_batch > 0) iteration += profile_.decode_step(decode_context, decode_batch);
      t += iteration;
      for (Slot& s : slots) {
        if (s.prefill_tokens > 0 && !s.runs) continue;  // still waiting for its KV
        s.prefill_tokens = 0;  // a prefill yields the first token, like a decode step
        s.context_tokens += 1;
        s.remaining_tokens = s.remaining_tokens > 0 ? s.remaining_tokens - 1 : 0;
      }
    } else if (decode_batch > 0) {
      // Decode steps of a fixed batch until the first predicted completion, or until a waiting
      // request's KV is ready (it joins the iteration after).
      uint32_t steps = UINT32_MAX;
      for (const Slot& s : slots) {
        if (s.prefill_tokens == 0) steps = std::min(steps, s.remaining_tokens);
      }
      steps = std::max<uint32_t>(steps, 1);
      if (blocked_until != Duration::max()) {
        uint32_t lo = 1, hi = steps;  // fewest steps that reach blocked_until
        while (lo < hi) {
          uint32_t mid = lo + (hi - lo) / 2;
          if (t + profile_.decode_steps(mid, decode_context, decode_batch) >= blocked_until) {
            hi = mid;
          } else {
            lo = mid + 1;
          }
        }
        steps = lo;
      }
      t += profile_.decode_steps(steps, decode_context, decode_batch);
      for (Slot& s : slots) {
        if (s.prefill_tokens > 0) continue;
        s.context_tokens += steps;
        s.remaining_tokens = s.remaining_tokens > steps ? s.remaining_tokens - steps : 0;
      }
    } else if (blocked_until != Duration::max()) {
      t = blocked_until;  // idle until a request's KV is ready
    } else {
      break;  // nothing running: cannot happen with the slots full
    }
    std::erase_if(slots, [](const Slot& s) {
      return s.prefill_tokens == 0 && s.remaining_tokens == 0;
    });
  }
  return ttu;
}

}  // namespace tempokv
