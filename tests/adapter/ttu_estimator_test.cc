#include "adapter/ttu_estimator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <initializer_list>
#include <random>

namespace tempokv {
namespace {

using std::chrono::milliseconds;

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

// Round numbers so expected times are exact: prefill 10 ms + 1 ms/token, decode step 20 ms,
// retrieval 1 GB/s.
CostProfile simple_profile() {
  CostProfile p;
  p.name = "test";
  p.model = "test-model";
  p.kv_bytes_per_token = 1000;
  p.prefill_a_s = 0.010;
  p.prefill_b_s_per_token = 0.001;
  p.decode_a_s = 0.020;
  p.retrieval_bytes_per_s = 1e9;
  return p;
}

TEST(OutputPredictor, MeanOfLongerCompletionsBoundedByLimit) {
  OutputPredictor p(/*window=*/8, /*prior_tokens=*/16);
  EXPECT_EQ(p.remaining(10, 100), 6u);  // prior before any completion
  for (uint32_t n : {10u, 20u, 30u}) p.record_completion(n);
  EXPECT_EQ(p.remaining(15, 100), 10u);  // mean of 20−15 and 30−15
  EXPECT_EQ(p.total(100), 20u);
  EXPECT_EQ(p.remaining(25, 28), 3u);    // bounded by the limit
  EXPECT_EQ(p.remaining(28, 28), 0u);
  EXPECT_EQ(p.remaining(40, 100), 1u);   // longer than every completion: at least one more
}

TEST(OutputPredictor, ForgetsCompletionsOutsideTheWindow) {
  OutputPredictor p(/*window=*/2, /*prior_tokens=*/16);
  for (uint32_t n : {100u, 10u, 20u}) p.record_completion(n);
  EXPECT_EQ(p.total(1000), 15u);
}

TEST(OutputPredictor, AQuantileOfLongerCompletionsIsNotPulledByTheTail) {
  OutputPredictor p(/*window=*/8, /*prior_tokens=*/16);
  EXPECT_EQ(p.remaining_quantile(10, 100, 0.5), 6u);  // the prior before any completion
  for (uint32_t n : {10u, 20u, 30u, 1000u}) p.record_completion(n);
  EXPECT_EQ(p.remaining(5, 2000), 260u);                // mean of 5, 15, 25, 995
  EXPECT_EQ(p.remaining_quantile(5, 2000, 0.5), 15u);   // their median (position 1 of 0..3)
  EXPECT_EQ(p.remaining_quantile(5, 2000, 1.0), 995u);
  EXPECT_EQ(p.remaining_quantile(5, 12, 0.5), 7u);      // bounded by the limit
  EXPECT_EQ(p.remaining_quantile(2000, 3000, 0.5), 1u);  // longer than every completion
}

// One slot, running with 10 tokens generated; recent outputs 12, 14, 16 and 200 tokens. The mean
// of what they leave (2, 4, 6, 190) projects 51 more steps; three of the four ended within 6.
TEST(TtuEstimator, TheMedianProjectsTheWaitBehindALongTailedOutputWithoutItsTail) {
  CostProfile profile = simple_profile();
  OutputPredictor predictor(8, 16);
  for (uint32_t n : {12u, 14u, 16u, 200u}) predictor.record_completion(n);
  RuntimeSnapshot snap;
  snap.max_active = 1;
  snap.running.push_back({7, 5000, 10, 300, 0});
  snap.waiting.push_back({1, 1000, 900, 100'000'000, 64});
  EXPECT_EQ(TtuEstimator(profile, predictor).estimate(snap)[0], milliseconds(51 * 20));
  EXPECT_EQ(TtuEstimator(profile, predictor, 0.5).estimate(snap)[0], milliseconds(4 * 20));
}

TEST(OutputPredictor, ConditionalAtomsAreTheLongerCompletionsInRunsBoundedByTheLimit) {
  OutputPredictor p(/*window=*/8, /*prior_tokens=*/16);
  std::vector<OutputPredictor::Atom> atoms;
  p.conditional_atoms(10, 100, 4, atoms);
  ASSERT_EQ(atoms.size(), 1u);  // the prior before any completion
  EXPECT_DOUBLE_EQ(atoms[0].tokens, 6);
  EXPECT_DOUBLE_EQ(atoms[0].weight, 1);
  for (uint32_t n : {10u, 20u, 30u, 40u, 1000u}) p.record_completion(n);
  atoms.clear();
  p.conditional_atoms(15, 500, 4, atoms);  // 5, 15, 25, 485 (1000 bounded by the limit)
  ASSERT_EQ(atoms.size(), 4u);
  EXPECT_DOUBLE_EQ(atoms[0].tokens, 5);
  EXPECT_DOUBLE_EQ(atoms[3].tokens, 485);
  EXPECT_DOUBLE_EQ(atoms[3].weight, 0.25);
  atoms.clear();
  p.conditional_atoms(15, 500, 2, atoms);  // two runs: (5, 15) and (25, 485)
  ASSERT_EQ(atoms.size(), 2u);
  EXPECT_DOUBLE_EQ(atoms[0].tokens, 10);
  EXPECT_DOUBLE_EQ(atoms[1].tokens, 255);
  EXPECT_DOUBLE_EQ(atoms[1].weight, 0.5);
  atoms.clear();
  p.conditional_atoms(500, 500, 2, atoms);
  EXPECT_TRUE(atoms.empty());
}

// A snapshot whose slots are all held by requests decoding (5,000-token contexts, limit 300
// tokens), with `generated[i]` tokens generated by the i-th (ids 7, 8, ...): the order-statistics
// cases.
RuntimeSnapshot decoding(std::initializer_list<uint32_t> generated) {
  RuntimeSnapshot snap;
  snap.max_active = static_cast<uint32_t>(generated.size());
  uint64_t id = 7;
  for (uint32_t n : generated) snap.running.push_back({id++, 5000, n, 300, 0});
  return snap;
}

// Two slots, both decoding with 5 tokens generated; recent outputs 10 and 30 tokens, so each has 5
// or 25 to go (mean 15). With the means both complete at step 15; the first of the two completes
// at E[min] = 5 + 20 / 4 = 10 steps, the other at E[max] = 20 (the same 30 steps in all).
TEST(TtuEstimator, OrderStatisticsFreeTheFirstSlotAtTheExpectedFirstCompletion) {
  CostProfile profile = simple_profile();
  OutputPredictor predictor(8, 16);
  for (uint32_t n : {10u, 30u}) predictor.record_completion(n);
  RuntimeSnapshot snap = decoding({5, 5});
  snap.waiting.push_back({1, 1000, 0, 0, 64});
  snap.waiting.push_back({2, 1000, 0, 0, 64});
  const std::vector<Duration> mean = TtuEstimator(profile, predictor).estimate(snap);
  EXPECT_EQ(mean[0], milliseconds(15 * 20));
  EXPECT_EQ(mean[1], milliseconds(15 * 20));
  const std::vector<Duration> ordered =
      TtuEstimator(profile, predictor, 0, /*order_statistics=*/true).estimate(snap);
  EXPECT_EQ(ordered[0], milliseconds(10 * 20));
  // Request 1's prefill (1,010 ms) beside one decode step of the other (its 11th), then 9 more.
  EXPECT_EQ(ordered[1], milliseconds(10 * 20 + 1010 + 20 + 9 * 20));
}

// Three slots with 10, 15 and 30 tokens generated; recent outputs 12, 20 and 40, so they have
// {2, 10, 30}, {5, 25} and {10} to go (means 14, 15, 10). The expected order statistics are 17/3,
// 35/3 and 65/3: the first slot frees after 6 steps, not at the smallest mean's 10.
TEST(TtuEstimator, OrderStatisticsOfThreeKnownWindowsSetTheFirstFreeSlot) {
  CostProfile profile = simple_profile();
  OutputPredictor predictor(8, 16);
  for (uint32_t n : {12u, 20u, 40u}) predictor.record_completion(n);
  RuntimeSnapshot snap = decoding({10, 15, 30});
  snap.waiting.push_back({1, 1000, 900, 100'000'000, 64});
  EXPECT_EQ(TtuEstimator(profile, predictor).estimate(snap)[0], milliseconds(10 * 20));
  EXPECT_EQ(TtuEstimator(profile, predictor, 0, true).estimate(snap)[0], milliseconds(6 * 20));
}

// Before any completion every output is the prior, a single value: the order statistics are the
// means, and so is the projection.
TEST(TtuEstimator, OrderStatisticsOfPriorsAreTheMeans) {
  CostProfile profile = simple_profile();
  OutputPredictor predictor(8, 16);
  RuntimeSnapshot snap = decoding({10, 4});
  snap.waiting.push_back({1, 1000, 0, 0, 64});
  snap.waiting.push_back({2, 1000, 900, 100'000'000, 64});
  EXPECT_EQ(TtuEstimator(profile, predictor, 0, true).estimate(snap),
            TtuEstimator(profile, predictor).estimate(snap));
}

// The predictor as first written (a scan of the window per question): the reference the sorted
// window with suffix sums must match exactly.
uint32_t remaining_by_scan(const std::deque<uint32_t>& recent, uint32_t prior, uint32_t generated,
                           uint32_t limit) {
  if (generated >= limit) return 0;
  uint64_t sum = 0, count = 0;
  for (uint32_t n : recent) {
    if (n > generated) {
      sum += n - generated;
      ++count;
    }
  }
  double mean = count ? double(sum) / double(count)
                      : double(prior > generated ? prior - generated : 1);
  auto rem = static_cast<uint32_t>(std::llround(std::max(1.0, mean)));
  return std::min(rem, limit - generated);
}

TEST(OutputPredictor, AnswersWhatAScanOfTheWindowAnswers) {
  std::mt19937_64 rng(7);
  for (uint32_t window : {1u, 2u, 7u, 256u}) {
    OutputPredictor p(window, /*prior_tokens=*/40);
    std::deque<uint32_t> recent;
    for (int completion = 0; completion < 600; ++completion) {
      // Long-tailed lengths with many ties, so means land on halves too.
      const uint32_t n = 1 + static_cast<uint32_t>(rng() % 4 == 0 ? rng() % 5000 : rng() % 64);
      p.record_completion(n);
      recent.push_back(n);
      if (recent.size() > window) recent.pop_front();
      for (int q = 0; q < 20; ++q) {
        const uint32_t generated = static_cast<uint32_t>(rng() % 300);
        const uint32_t limit = 1 + static_cast<uint32_t>(rng() % 6000);
        ASSERT_EQ(p.remaining(generated, limit), remaining_by_scan(recent, 40, generated, limit))
            << "window " << window << " generated " << generated << " limit " << limit;
      }
      ASSERT_EQ(p.total(100000), remaining_by_scan(recent, 40, 0, 100000));
    }
  }
}

TEST(TtuEstimator, FreeSlotMeansImmediateUse) {
  CostProfile profile = simple_profile();
  OutputPredictor predictor(8, 16);
  TtuEstimator est(profile, predictor);
  RuntimeSnapshot snap;
  snap.waiting.push_back({1, 1000, 900, 900'000, 64});
  auto ttu = est.estimate(snap);
  ASSERT_EQ(ttu.size(), 1u);
  EXPECT_EQ(ttu[0], Duration::zero());
}

TEST(TtuEstimator, RankOneWaitsForThePredecessorAndRankTwoForRankOne) {
  CostProfile profile = simple_profile();
  OutputPredictor predictor(8, 16);
  TtuEstimator est(profile, predictor);
  RuntimeSnapshot snap;
  snap.max_active = 1;
  snap.running.push_back({7, 5000, 10, 20, 0});  // predicted 6 more tokens: 6 steps of 20 ms
  snap.waiting.push_back({1, 1000, 900, 100'000'000, 64});
  snap.waiting.push_back({2, 500, 0, 0, 64});
  auto ttu = est.estimate(snap);
  EXPECT_EQ(ttu[0], milliseconds(120));
  // Rank one: retrieval 100 ms, prefill of 100 tokens 110 ms (first token), then 15 more steps.
  EXPECT_EQ(ttu[1], milliseconds(120 + 100 + 110 + 15 * 20));
}

// The runtime asks for the KV of every request it admits at a boundary at that boundary (the
// emulated engine and vLLM both do): their TTUs are equal though their copies run one after
// another.
TEST(TtuEstimator, RequestsAdmittedTogetherAllNeedTheirKvAtTheBoundary) {
  CostProfile profile = simple_profile();
  OutputPredictor predictor(8, 16);
  TtuEstimator est(profile, predictor);
  RuntimeSnapshot snap;
  snap.max_active = 4;
  snap.boundary_in_ns = 5'000'000;
  snap.waiting.push_back({1, 1000, 1000, 200'000'000, 64});
  snap.waiting.push_back({2, 1000, 1000, 300'000'000, 64});
  snap.waiting.push_back({3, 1000, 1000, 0, 64});
  auto ttu = est.estimate(snap);
  EXPECT_EQ(ttu[0], milliseconds(5));
  EXPECT_EQ(ttu[1], milliseconds(5));
  EXPECT_EQ(ttu[2], milliseconds(5));
}

TEST(TtuEstimator, GpuKvCapacityLimitsAdmissions) {
  CostProfile profile = simple_profile();
  OutputPredictor predictor(8, 16);
  TtuEstimator est(profile, predictor);
  RuntimeSnapshot snap;
  snap.max_active = 4;
  snap.kv_capacity_tokens = 2500;
  snap.running.push_back({7, 2000, 14, 100, 0});  // 2 more steps of 20 ms, 2000 tokens held
  snap.waiting.push_back({1, 1000, 1000, 0, 64});
  auto ttu = est.estimate(snap);
  // A free slot, but 2000 + 1000 tokens do not fit: it waits for request 7 to finish.
  EXPECT_EQ(ttu[0], milliseconds(40));
}

TEST(TtuEstimator, AttentionOverTheCachedContextCostsThePrefill) {
  CostProfile profile = simple_profile();
  profile.prefill_c_s_per_token2 = 1e-9;
  // 100 new tokens after 10,000 cached: 10 ms + 100 ms + (100² + 2·100·10,000) ns = 112.01 ms.
  EXPECT_EQ(profile.prefill(100, 10'000), std::chrono::microseconds(112'010));
}

TEST(TtuEstimator, DecodeStepsCostTheBatchContext) {
  CostProfile profile = simple_profile();
  profile.decode_b_s_per_context_token = 1e-6;  // 1 µs per context token per step
  OutputPredictor predictor(8, 16);
  TtuEstimator est(profile, predictor);
  RuntimeSnapshot snap;
  snap.max_active = 2;
  snap.running.push_back({1, 1000, 14, 100, 0});  // 2 more steps
  snap.running.push_back({2, 3000, 10, 100, 0});  // 6 more steps
  snap.waiting.push_back({3, 100, 0, 0, 64});
  auto ttu = est.estimate(snap);
  // Two steps of the pair: context 4000 then 4002 → 2·20 ms + (4000 + 4002) µs.
  EXPECT_EQ(ttu[0], milliseconds(40) + std::chrono::microseconds(8002));
}

// Chunked prefill (vLLM's token budget per iteration): request 1's 300-token prefill shares each
// iteration's 100 tokens with decoder 7 (one token), so it runs in chunks of 99, 99, 99 and 3
// (10 ms + 1 ms/token each, plus the 20 ms decode step: 129, 129, 129, 33 ms), then decoder 7's
// 11 remaining tokens take 220 ms: request 2 gets the slot at 640 ms. Run whole, the prefill
// would take one 330 ms iteration and the slot would free at 330 + 14 x 20 = 610 ms.
TEST(TtuEstimator, AChunkedPrefillRunsChunkByChunkBesideTheDecoders) {
  CostProfile profile = simple_profile();
  OutputPredictor predictor(8, 16);
  TtuEstimator est(profile, predictor);
  RuntimeSnapshot snap;
  snap.max_active = 2;
  snap.running.push_back({7, 1000, 1, 100, 0});  // 15 more tokens predicted
  snap.waiting.push_back({1, 300, 0, 0, 64});
  snap.waiting.push_back({2, 100, 100, 0, 64});
  snap.token_budget = 100;
  auto ttu = est.estimate(snap);
  EXPECT_EQ(ttu[0], Duration::zero());
  EXPECT_EQ(ttu[1], milliseconds(640));
  snap.token_budget = 0;
  EXPECT_EQ(est.estimate(snap)[1], milliseconds(610));
}

// A running request part-way through a chunked prefill: only the tokens left are projected, and
// its retrieval (done with the first chunk) is not counted again.
TEST(TtuEstimator, ARunningChunkedPrefillProjectsOnlyWhatIsLeft) {
  CostProfile profile = simple_profile();
  OutputPredictor predictor(8, 16);
  TtuEstimator est(profile, predictor);
  RuntimeSnapshot snap;
  snap.max_active = 1;
  snap.token_budget = 100;
  RunningRequest r{7, 1000, 0, 100, 150};  // 150 of its prompt's tokens still to compute
  snap.running.push_back(r);
  snap.waiting.push_back({1, 100, 100, 0, 64});
  // Chunks of 100 and 50 (110 + 60 ms), then 15 decode steps of 20 ms.
  EXPECT_EQ(est.estimate(snap)[0], milliseconds(110 + 60 + 15 * 20));
}

// Async loads (vLLM 0.32's Scheduler.schedule): one slot, busy for 6 more decode steps (120 ms).
// When it frees, the runtime starts the loads of every waiting request with a hit at that
// boundary: a loading request holds no slot, so the walk of the waiting order goes on. With the
// emulated engine's rule each would wait for the one before it to finish.
TEST(TtuEstimator, AsyncLoadsStartForTheWholeQueueAtOneFreeSlot) {
  CostProfile profile = simple_profile();
  OutputPredictor predictor(8, 16);
  TtuEstimator est(profile, predictor);
  RuntimeSnapshot snap;
  snap.max_active = 1;
  snap.running.push_back({7, 5000, 10, 20, 0});  // 6 more tokens: 6 steps of 20 ms
  for (uint64_t id : {1, 2, 3}) snap.waiting.push_back({id, 1000, 900, 0, 64});
  std::vector<Duration> ttu = est.estimate(snap);
  EXPECT_EQ(ttu[1], milliseconds(120 + 110 + 15 * 20));  // each behind the one before it
  snap.async_loads = true;
  ttu = est.estimate(snap);
  EXPECT_EQ(ttu, std::vector<Duration>(3, milliseconds(120)));
}

// A request without a hit takes the slot it is admitted to; requests whose KV has arrived take a
// free slot before any waiting request. At 120 ms request 1's load starts and request 2 (no hit)
// takes the slot: 510 ms of prefill and 15 steps. When 2 finishes (930 ms), 1 (loaded long
// before) takes the slot ahead of 3: its 100-token prefill (110 ms) and 15 steps; 3's load starts
// at 1340 ms.
TEST(TtuEstimator, AsyncLoadsARequestWithoutAHitTakesASlotAndLoadedOnesGoFirst) {
  CostProfile profile = simple_profile();
  OutputPredictor predictor(8, 16);
  TtuEstimator est(profile, predictor);
  RuntimeSnapshot snap;
  snap.async_loads = true;
  snap.max_active = 1;
  snap.running.push_back({7, 5000, 10, 20, 0});
  snap.waiting.push_back({1, 1000, 900, 0, 64, 0, /*load_ns=*/50'000'000});
  snap.waiting.push_back({2, 500, 0, 0, 64});
  snap.waiting.push_back({3, 1000, 900, 0, 64, 0, 50'000'000});
  const std::vector<Duration> ttu = est.estimate(snap);
  EXPECT_EQ(ttu[0], milliseconds(120));
  EXPECT_EQ(ttu[1], milliseconds(120));
  EXPECT_EQ(ttu[2], milliseconds(120 + 510 + 300 + 110 + 300));
}

// Request 7's KV is loading (no slot held) and request 5 decodes its last 2 steps. At 40 ms the
// slot frees: if 7's KV is on the device by then it takes the slot first (its 100-token prefill,
// 110 ms, with no copy in the iteration though 100 MB would take 100 ms at the profile's rate:
// the copy ran outside the iterations; then 15 steps), else request 1 (no hit) gets it.
TEST(TtuEstimator, AsyncLoadsALoadedRequestTakesTheFreeSlotAndOneStillLoadingDoesNot) {
  CostProfile profile = simple_profile();
  OutputPredictor predictor(8, 16);
  TtuEstimator est(profile, predictor);
  RuntimeSnapshot snap;
  snap.async_loads = true;
  snap.max_active = 1;
  snap.running.push_back({5, 5000, 14, 100, 0});  // 2 more steps
  RunningRequest loading{7, 1000, 0, 64, 100, /*cached_bytes=*/100'000'000};
  loading.loading = true;
  loading.ready_in_ns = 30'000'000;  // on the device at 30 ms
  snap.running.push_back(loading);
  snap.waiting.push_back({1, 500, 0, 0, 64});
  EXPECT_EQ(est.estimate(snap)[0], milliseconds(40 + 110 + 15 * 20));
  snap.running[1].ready_in_ns = 100'000'000;  // at 100 ms: still loading when the slot frees
  EXPECT_EQ(est.estimate(snap)[0], milliseconds(40));
}

// vLLM walks its waiting queue only while the step's token budget lasts after the running
// requests' tokens: a running prefill with 3000 tokens left takes the whole 2048-token budget,
// so no load starts at this boundary although slots are free; at the next (2058 ms) 952 of its
// tokens are left and the walk goes on.
TEST(TtuEstimator, AsyncLoadsStartOnlyWhileTheStepsTokenBudgetLasts) {
  CostProfile profile = simple_profile();
  OutputPredictor predictor(8, 16);
  TtuEstimator est(profile, predictor);
  RuntimeSnapshot snap;
  snap.async_loads = true;
  snap.max_active = 4;
  snap.token_budget = 2048;
  snap.running.push_back({7, 3000, 0, 64, 3000});
  snap.waiting.push_back({1, 1000, 900, 0, 64});
  EXPECT_EQ(est.estimate(snap)[0], milliseconds(10 + 2048));
  snap.async_loads = false;  // the emulated engine's rule admits at any free slot
  EXPECT_EQ(est.estimate(snap)[0], Duration::zero());
}

TEST(TtuEstimator, ZeroSlotsNeverAdmit) {
  CostProfile profile = simple_profile();
  OutputPredictor predictor(8, 16);
  TtuEstimator est(profile, predictor);
  RuntimeSnapshot snap;
  snap.max_active = 0;
  snap.waiting.push_back({3, 100, 0, 0, 64});
  EXPECT_GT(est.estimate(snap)[0], std::chrono::hours(24));
}

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
  }
}

}  // namespace
}  // namespace tempokv
