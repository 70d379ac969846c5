#include "adapter/ttu_estimator.h"

#include <algorithm>

namespace tempokv {
namespace {

// A request holding a slot in the projection.
struct Slot {
  uint64_t context_tokens;
  uint32_t remaining_tokens;  // predicted tokens still to generate
  uint32_t prefill_tokens;    // > 0: its prefill runs in the next iteration
};

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
    slots.push_back({r.context_tokens, rem, r.prefill_tokens_left});
  }

  Duration t{static_cast<int64_t>(snap.boundary_in_ns)};
  size_t next = 0;
  while (next < n_waiting) {
    // Admissions at this boundary: retrievals run one after another, then the prefills.
    Duration iteration{0};
    const size_t first_admitted = slots.size();
    while (slots.size() < snap.max_active && next < n_waiting) {
      const WaitingRequest& w = snap.waiting[next];
      ttu[next] = t + iteration;
      iteration += profile_.retrieval(w.cached_bytes);
      uint32_t total = predictor_.total(w.max_output_tokens);
      slots.push_back({w.prompt_tokens, total, std::max<uint32_t>(1, w.prompt_tokens -
                                                                         w.cached_tokens)});
      ++next;
    }
    bool prefills = false;
    uint64_t decode_context = 0, decode_batch = 0;
    for (size_t i = 0; i < slots.size(); ++i) {
      if (slots[i].prefill_tokens > 0) {
        prefills = true;
        iteration += profile_.prefill(slots[i].prefill_tokens);
      } else if (i < first_admitted) {
        decode_context += slots[i].context_tokens;
        ++decode_batch;
      }
    }
    if (prefills) {
      // One iteration: admissions' retrievals and prefills plus a decode step of the others.
      if (decode_batch > 0) iteration += profile_.decode_step(decode_context, decode_batch);
      t += iteration;
      for (Slot& s : slots) {
        s.prefill_tokens = 0;  // a prefill yields the first token, like a decode step
        s.context_tokens += 1;
        s.remaining_tokens = s.remaining_tokens > 0 ? s.remaining_tokens - 1 : 0;
      }
    } else {
      if (slots.empty()) break;  // nothing running and nothing admitted: cannot happen
      // Decode steps of a fixed batch until the first predicted completion.
      uint32_t steps = slots[0].remaining_tokens;
      for (const Slot& s : slots) steps = std::min(steps, s.remaining_tokens);
      steps = std::max<uint32_t>(steps, 1);
      t += profile_.decode_steps(steps, decode_context, decode_batch);
      for (Slot& s : slots) {
        s.context_tokens += steps;
        s.remaining_tokens = s.remaining_tokens > steps ? s.remaining_tokens - steps : 0;
      }
    }
    std::erase_if(slots, [](const Slot& s) { return s.remaining_tokens == 0; });
  }
  return ttu;
}

}  // namespace tempokv
