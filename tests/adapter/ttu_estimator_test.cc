#include "adapter/ttu_estimator.h"

#include <gtest/gtest.h>

namespace tempokv {
namespace {

using std::chrono::milliseconds;

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

TEST(TtuEstimator, ZeroSlotsNeverAdmit) {
  CostProfile profile = simple_profile();
  OutputPredictor predictor(8, 16);
  TtuEstimator est(profile, predictor);
  RuntimeSnapshot snap;
  snap.max_active = 0;
  snap.waiting.push_back({3, 100, 0, 0, 64});
  EXPECT_GT(est.estimate(snap)[0], std::chrono::hours(24));
}

}  // namespace
}  // namespace tempokv
