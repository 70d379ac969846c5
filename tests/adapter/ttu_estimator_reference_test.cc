// TtuEstimator against the projection as first written (every slot visited at every event): on
// random queues the aggregated projection must give exactly the reference's TTUs.
#include <gtest/gtest.h>

#include <random>

#include "adapter/ttu_estimator.h"
#include "simple_profile.h"

namespace tempokv {
namespace {

using testing_profiles::simple_profile;

// The projection as first written (every slot visited at every event): the reference the
// aggregated one must match exactly.
namespace reference {
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

std::vector<Duration> slot_by_slot(const CostProfile& profile_, const OutputPredictor& predictor_,
                                   const RuntimeSnapshot& snap) {
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

}  // namespace reference

// Random queues (slot limits 1-300, running requests mid-prefill or decoding, hits whose KV is
// ready or not, a KV capacity or none, calibrated predictor or prior): the aggregated projection
// gives exactly the reference's TTUs, and with a horizon the same ones up to it and a lower bound
// (the first boundary past it) beyond.
TEST(TtuEstimator, AggregatedProjectionEqualsTheSlotBySlotOneAndTheHorizonOnlyBoundsIt) {
  CostProfile profile = simple_profile();
  profile.decode_b_s_per_context_token = 1e-8;
  profile.decode_c_s_per_seq = 1e-4;
  profile.prefill_c_s_per_token2 = 1e-10;
  std::mt19937_64 rng(7);
  auto pick = [&](uint64_t n) { return rng() % n; };
  for (int trial = 0; trial < 300; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    OutputPredictor predictor(64, 1 + static_cast<uint32_t>(pick(128)));
    if (pick(2)) {
      for (int i = 0; i < 20; ++i) predictor.record_completion(1 + static_cast<uint32_t>(pick(200)));
    }
    TtuEstimator est(profile, predictor);
    RuntimeSnapshot snap;
    snap.max_active = 1 + static_cast<uint32_t>(pick(trial % 3 == 0 ? 300 : 8));
    snap.kv_capacity_tokens = pick(3) == 0 ? 0 : 20'000 + pick(400'000);
    snap.boundary_in_ns = pick(50'000'000);
    const uint64_t running = pick(snap.max_active + 1);
    for (uint64_t i = 0; i < running; ++i) {
      RunningRequest r;
      r.id = i;
      r.max_output_tokens = 1 + static_cast<uint32_t>(pick(200));
      r.generated_tokens = static_cast<uint32_t>(pick(r.max_output_tokens + 1));
      r.context_tokens = 100 + static_cast<uint32_t>(pick(8000)) + r.generated_tokens;
      if (pick(4) == 0) {
        r.generated_tokens = 0;
        r.prefill_tokens_left = 1 + static_cast<uint32_t>(pick(r.context_tokens));
        r.cached_bytes = pick(1'000'000'000);
        r.ready_in_ns = pick(2) ? 0 : pick(2'000'000'000);
      }
      snap.running.push_back(r);
    }
    const uint64_t waiting = 1 + pick(trial % 3 == 0 ? 1000 : 40);
    for (uint64_t i = 0; i < waiting; ++i) {
      WaitingRequest w;
      w.id = 1000 + i;
      w.prompt_tokens = 1 + static_cast<uint32_t>(pick(16000));
      w.cached_tokens = static_cast<uint32_t>(pick(w.prompt_tokens + 1));
      w.cached_bytes = uint64_t{w.cached_tokens} * 1000;
      w.max_output_tokens = 1 + static_cast<uint32_t>(pick(200));
      w.ready_in_ns = pick(3) ? 0 : pick(3'000'000'000);
      snap.waiting.push_back(w);
    }
    const std::vector<Duration> expected = reference::slot_by_slot(profile, predictor, snap);
    ASSERT_EQ(est.estimate(snap), expected);
    {
      // Without hits or loads, async loads change nothing (no token budget: no walk limit).
      RuntimeSnapshot plain = snap;
      for (RunningRequest& r : plain.running) r.cached_bytes = r.ready_in_ns = 0;
      for (WaitingRequest& w : plain.waiting) w.cached_tokens = w.cached_bytes = w.ready_in_ns = 0;
      const std::vector<Duration> sync = reference::slot_by_slot(profile, predictor, plain);
      plain.async_loads = true;
      ASSERT_EQ(est.estimate(plain), sync);
    }
    const Duration horizon(static_cast<int64_t>(pick(5'000'000'000)));
    const std::vector<Duration> bounded = est.estimate(snap, horizon);
    for (size_t i = 0; i < expected.size(); ++i) {
      if (bounded[i] <= horizon) {
        EXPECT_EQ(bounded[i], expected[i]) << "request " << i;
      } else {
        EXPECT_LE(bounded[i], expected[i]) << "request " << i;
      }
    }
    // Past the horizon until the first exact_through requests have theirs exactly.
    const size_t exact_through = pick(snap.waiting.size() + 1);
    const std::vector<Duration> reaching = est.estimate(snap, horizon, nullptr, exact_through);
    for (size_t i = 0; i < expected.size(); ++i) {
      if (i < exact_through || reaching[i] <= horizon) {
        EXPECT_EQ(reaching[i], expected[i]) << "request " << i << " of " << exact_through;
      } else {
        EXPECT_LE(reaching[i], expected[i]) << "request " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tempokv
