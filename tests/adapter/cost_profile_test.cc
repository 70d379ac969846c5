#include "adapter/cost_profile.h"

#include <gtest/gtest.h>

namespace tempokv {
namespace {

TEST(CostProfile, ParsesEveryField) {
  auto p = CostProfile::parse(R"({"name": "x", "model": "m", "kv_bytes_per_token": 131072,
      "prefill": {"a_s": 0.01, "b_s_per_token": 2e-5, "c_s_per_token2": 1e-10},
      "decode": {"a_s": 0.007, "b_s_per_context_token": 4e-8, "c_s_per_seq": 1e-4},
      "retrieval": {"latency_s": 0.001, "bytes_per_s": 2e10}})",
                              "inline");
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->kv_bytes_per_token, 131072u);
  EXPECT_DOUBLE_EQ(p->decode_b_s_per_context_token, 4e-8);
  EXPECT_EQ(p->retrieval(0), Duration::zero());
}

TEST(CostProfile, MissingFieldIsNamed) {
  auto p = CostProfile::parse(R"({"name": "x", "kv_bytes_per_token": 1,
      "prefill": {"a_s": 0.01, "b_s_per_token": 2e-5, "c_s_per_token2": 0},
      "decode": {"a_s": 0.007, "c_s_per_seq": 1e-4},
      "retrieval": {"latency_s": 0, "bytes_per_s": 1}})",
                              "inline");
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.status().message().find("decode.b_s_per_context_token"), std::string::npos);
}

TEST(CostProfile, DecodeStepsClosedFormEqualsTheSumOfSteps) {
  CostProfile p;
  p.decode_a_s = 0.007;
  p.decode_b_s_per_context_token = 3e-8;
  p.decode_c_s_per_seq = 2e-4;
  Duration sum{0};
  for (uint64_t k = 0; k < 50; ++k) sum += p.decode_step(10'000 + k * 3, 3);
  EXPECT_NEAR(to_seconds(p.decode_steps(50, 10'000, 3)), to_seconds(sum), 1e-7);
}

TEST(CostProfile, RejectsNotJson) {
  EXPECT_EQ(CostProfile::parse("not json", "inline").status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tempokv
