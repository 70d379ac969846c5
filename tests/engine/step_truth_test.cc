// StepTruth: the oracle is the profile (× jitter), the hidden truth is another shape that no one
// scale of the profile reproduces, and both repeat exactly for a seed.
#include "engine/step_truth.h"

#include <gtest/gtest.h>

namespace tempokv {
namespace {

CostProfile llama() {
  CostProfile p;
  p.name = "t";
  p.model = "m";
  p.kv_bytes_per_token = 131072;
  p.prefill_a_s = 0.015;
  p.prefill_b_s_per_token = 2.5e-5;
  p.prefill_c_s_per_token2 = 8.7e-10;
  p.decode_a_s = 0.012;
  p.decode_b_s_per_context_token = 6.55e-8;
  p.decode_c_s_per_seq = 0.0003;
  p.retrieval_latency_s = 0.001;
  p.retrieval_bytes_per_s = 17.5e9;
  p.kv_capacity_tokens = 404000;
  return p;
}

StepTruthOptions noiseless_hidden() {
  StepTruthOptions o;
  o.hidden = true;
  o.noise_sigma = 0;
  o.tail_probability = 0;
  return o;
}

TEST(StepTruth, OracleWithoutJitterIsTheProfile) {
  const CostProfile p = llama();
  StepTruth t(p, StepTruthOptions{}, 0, 1);
  EXPECT_EQ(t.prefill(4000, 60000), p.prefill(4000, 60000));
  EXPECT_EQ(t.decode_step(150000, 4), p.decode_step(150000, 4));
  EXPECT_FALSE(t.under_pressure(10'000'000));
}

TEST(StepTruth, HiddenDecodeDiffersFromTheProfileByMoreThanAScale) {
  const CostProfile p = llama();
  StepTruth t(p, noiseless_hidden(), 0, 1);
  const double small = to_seconds(t.decode_step(20000, 1)) / to_seconds(p.decode_step(20000, 1));
  const double large =
      to_seconds(t.decode_step(260000, 4)) / to_seconds(p.decode_step(260000, 4));
  // 1.11 against 1.19: any one scale is off by over 3 % at one end or the other.
  EXPECT_GT(large - small, 0.05) << small << " " << large;
}

TEST(StepTruth, HiddenPrefillIsChunkedAndDearerThanTheProfile) {
  const CostProfile p = llama();
  StepTruthOptions o = noiseless_hidden();
  StepTruth t(p, o, 0, 1);
  // One chunk: the profile plus one chunk overhead.
  EXPECT_NEAR(to_seconds(t.prefill(100, 0)),
              to_seconds(p.prefill(100, 0)) + o.chunk_overhead * p.prefill_a_s, 1e-9);
  // Ten chunks pay ten overheads; attention is the same as one causal pass.
  EXPECT_NEAR(to_seconds(t.prefill(10 * 2048, 0)),
              to_seconds(p.prefill(10 * 2048, 0)) + 10 * o.chunk_overhead * p.prefill_a_s, 1e-6);
}

TEST(StepTruth, PressureAboveTheFractionOfCapacity) {
  StepTruth t(llama(), noiseless_hidden(), 0, 1);
  EXPECT_FALSE(t.under_pressure(300000));
  EXPECT_TRUE(t.under_pressure(350000));
}

TEST(StepTruth, HiddenNoiseHasATailAndRepeatsForASeed) {
  const CostProfile p = llama();
  StepTruthOptions o;
  o.hidden = true;
  StepTruth a(p, o, 0, 7), b(p, o, 0, 7);
  const double base = to_seconds(StepTruth(p, noiseless_hidden(), 0, 7).decode_step(100000, 4));
  double max_ratio = 0;
  for (int i = 0; i < 2000; ++i) {
    const Duration x = a.decode_step(100000, 4);
    ASSERT_EQ(x, b.decode_step(100000, 4));
    max_ratio = std::max(max_ratio, to_seconds(x) / base);
  }
  // Lognormal σ 0.08 alone stays under 1.4 in 2000 draws; the stalls go far above.
  EXPECT_GT(max_ratio, 1.5);
}

TEST(StepTruth, RejectsNonsense) {
  StepTruthOptions o;
  o.prefill_chunk_tokens = 0;
  EXPECT_EQ(o.validate().code(), StatusCode::kInvalidArgument);
  o = StepTruthOptions{};
  o.tail_probability = 2;
  EXPECT_EQ(o.validate().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(StepTruthOptions{}.validate().is_ok());
}

}  // namespace
}  // namespace tempokv
