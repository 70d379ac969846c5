// A tiny simulated run through the evaluation's stack with exact numbers: an SSD moving 1 MiB per
// ms with no latency, 1 MiB chunks, and a profile whose steps are whole numbers of nanoseconds
// (retrieval 1 ms + 1 ms per MiB; prefill 10 ms + 10 µs per token; decode 5 ms + 1 µs per
// context token + 1 ms per sequence).
#include <gtest/gtest.h>

#include <algorithm>

#include "common/units.h"
#include "eval/metrics.h"
#include "eval/stack.h"
#include "workload/tokens.h"

namespace tempokv {
namespace {

constexpr uint64_t kTokenBytes = 4096;
constexpr uint64_t kChunk = 256 * kTokenBytes;

CostProfile exact_profile() {
  CostProfile p;
  p.name = "exact";
  p.model = "test-model";
  p.kv_bytes_per_token = kTokenBytes;
  p.prefill_a_s = 0.010;
  p.prefill_b_s_per_token = 10e-6;
  p.decode_a_s = 0.005;
  p.decode_b_s_per_context_token = 1e-6;
  p.decode_c_s_per_seq = 0.001;
  p.retrieval_latency_s = 0.001;
  p.retrieval_bytes_per_s = 1000.0 * kMiB;
  return p;
}

Request request(uint64_t id, uint32_t doc, uint32_t question, uint32_t output, int64_t at_ms) {
  std::vector<uint32_t> tokens;
  append_synthetic_tokens(id, doc, tokens);
  Request r;
  r.id = id;
  r.arrival = std::chrono::milliseconds(at_ms);
  r.model = "test-model";
  r.prompt_tokens = doc + question;
  r.suffix_tokens = question;
  r.chunks = chunk_prefix(r.model, tokens, 256, kTokenBytes);
  r.precomputed_chunks = static_cast<uint32_t>(r.chunks.size());
  r.output_tokens = r.max_output_tokens = output;
  return r;
}

struct Tiny {
  std::unique_ptr<EvalStorage> storage;
  std::unique_ptr<EvalStack> stack;
  TimePoint start{};
};

Tiny run_tiny(const std::string& policy) {
  StorageConfig sc;
  sc.sim_read_bytes_per_s = sc.sim_write_bytes_per_s = 1000.0 * kMiB;
  sc.sim_latency = Duration::zero();
  sc.chunk_bytes = kChunk;
  Tiny t;
  t.storage = EvalStorage::open(sc).value();
  // A 1024-token document (4 chunks) with a 16-token question, then a prompt with no hit.
  std::vector<Request> reqs{request(1, 1024, 16, 2, 0), request(2, 0, 100, 1, 100)};
  EXPECT_TRUE(t.storage->precompute(reqs).is_ok());
  StackConfig c;
  c.policy = policy;
  c.profile = exact_profile();
  c.fast_tier_bytes = 64 * kChunk;
  c.budget_bytes = 32 * kChunk;
  c.jitter_sigma = 0;
  t.stack = EvalStack::create(*t.storage, c).value();
  t.start = t.storage->executor().now();
  EXPECT_TRUE(t.stack->submit(reqs, t.start).is_ok());
  EXPECT_TRUE(t.stack->run(nullptr).is_ok());
  return t;
}

TEST(EvalStack, DemandRunHasExactTimesAndItsCIsTheStagingFloor) {
  Tiny t = run_tiny("demand");
  std::vector<RequestRecord> recs = t.stack->records();
  ASSERT_EQ(recs.size(), 2u);
  const RequestRecord& a = recs[0];
  EXPECT_EQ(a.path, RequestPath::kStaged);
  // Staging 4 chunks at once: 4 ms; retrieval 1 + 4 ms; prefill of 16 tokens 10.16 ms.
  EXPECT_EQ(*a.ready - t.start, std::chrono::microseconds(4000));
  EXPECT_EQ(*a.retrieval_end - *a.retrieval_start, std::chrono::microseconds(5000));
  EXPECT_EQ(*a.ttft(), std::chrono::microseconds(19'160));
  // One decode step: 5 ms + 1041 context tokens × 1 µs + 1 ms.
  EXPECT_EQ(*a.finished - t.start, std::chrono::microseconds(26'201));
  const RequestRecord& b = recs[1];
  EXPECT_EQ(b.path, RequestPath::kNoHit);
  EXPECT_EQ(*b.ttft(), std::chrono::microseconds(11'000));  // prefill of 100 tokens

  RunMetrics m = compute_metrics(recs, t.stack->controller().stats().protected_gib_s,
                                 1000.0 * kMiB);
  EXPECT_EQ(m.completed, 2u);
  EXPECT_DOUBLE_EQ(m.throughput_tok_s, 3 / 0.111);
  // 4 MiB reserved then protected from the commit (0) to the end of the transfer (9 ms).
  const double c = 4.0 / 1024 * 0.009 / 2;
  EXPECT_NEAR(m.c_gib_s_per_req, c, 1e-12);
  EXPECT_NEAR(m.c_floor_gib_s_per_req, 4.0 / 1024 * 0.005 / 2, 1e-12);
  EXPECT_NEAR(m.c_floor_staging_gib_s_per_req, c, 1e-12);
  FastTierStats tier = t.stack->tier().stats();
  EXPECT_EQ(tier.protected_bytes + tier.reserved_bytes, 0u);
}

// Three 1040-token prompts at once under the hidden truth with a 3200-token KV cache, whose 85 %
// line is 2720 tokens: the engine admits up to the whole cache, or up to the line.
struct LongPrompts {
  std::unique_ptr<EvalStorage> storage;
  std::unique_ptr<EvalStack> stack;
};
LongPrompts run_three_long_prompts(bool admit_by_line) {
  StorageConfig sc;
  sc.sim_read_bytes_per_s = sc.sim_write_bytes_per_s = 1000.0 * kMiB;
  sc.sim_latency = Duration::zero();
  sc.chunk_bytes = kChunk;
  LongPrompts t;
  t.storage = EvalStorage::open(sc).value();
  std::vector<Request> reqs{request(1, 1024, 16, 20, 0), request(2, 1024, 16, 20, 0),
                            request(3, 1024, 16, 20, 0)};
  EXPECT_TRUE(t.storage->precompute(reqs).is_ok());
  StackConfig c;
  c.policy = "tempokv";
  c.profile = exact_profile();
  c.profile.kv_capacity_tokens = 3200;
  c.truth.hidden = true;
  c.truth.admit_by_line = admit_by_line;
  c.fast_tier_bytes = 64 * kChunk;
  c.budget_bytes = 32 * kChunk;
  t.stack = EvalStack::create(*t.storage, c).value();
  EXPECT_TRUE(t.stack->submit(reqs, t.storage->executor().now()).is_ok());
  EXPECT_TRUE(t.stack->run(nullptr).is_ok());
  return t;
}

// The engine reports its KV-pressure preemptions to its adapter as a runtime does, and the
// adapter learns the line from them alone: the three prompts decoding at once pass it.
TEST(EvalStack, TheAdapterLearnsThePreemptionLineFromTheEnginesReports) {
  LongPrompts t = run_three_long_prompts(false);
  ServingEngine& engine = *t.stack->engines().at(0);
  EXPECT_GT(engine.stats().preemptions, 0u);
  const uint64_t line = engine.adapter()->preemption_line();
  EXPECT_GE(line, 2720u);            // preempted only above the truth's line
  EXPECT_LT(line, 3 * (1040 + 20));  // at a context the three reached
}

// Admitting by the line (StepTruthOptions::admit_by_line, as vLLM's scheduler admits against its
// real free blocks): the three prompts never decode together past the line, so none is
// preempted, and the third waits for a slot the first two leave.
TEST(EvalStack, AnEngineAdmittingByTheLineNeverPassesIt) {
  LongPrompts t = run_three_long_prompts(true);
  EXPECT_EQ(t.stack->engines().at(0)->stats().preemptions, 0u);
  std::vector<RequestRecord> recs = t.stack->records();
  ASSERT_EQ(recs.size(), 3u);
  std::sort(recs.begin(), recs.end(),
            [](const RequestRecord& a, const RequestRecord& b) { return a.id < b.id; });
  for (const RequestRecord& r : recs) ASSERT_TRUE(r.admitted && r.finished) << r.id;
  EXPECT_GE(*recs[2].admitted, std::min(*recs[0].finished, *recs[1].finished));
}

TEST(EvalStack, BaselineNeverProtectsAnything) {
  Tiny t = run_tiny("lmcache-dax");
  std::vector<RequestRecord> recs = t.stack->records();
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].path, RequestPath::kOrdinary);
  // The on-demand read takes the same 4 ms as staging.
  EXPECT_EQ(*recs[0].ttft(), std::chrono::microseconds(19'160));
  EXPECT_EQ(t.stack->controller().stats().protected_gib_s, 0.0);
}

TEST(EvalStack, ProgressiveReleaseSavesTheCopiedObjectsTimeAndChangesNothingElse) {
  Tiny plain = run_tiny("tempokv");
  Tiny progressive = run_tiny("tempokv-progressive");
  std::vector<RequestRecord> a = plain.stack->records(), b = progressive.stack->records();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].ttft(), b[i].ttft());
    EXPECT_EQ(a[i].finished, b[i].finished);
  }
  // The four 1 MiB copies end 1, 2, 3 and 4 ms into the transfer's copies: released early by
  // 3 + 2 + 1 + 0 ms, 6 MiB·ms over 2 requests.
  double saved = plain.stack->controller().stats().protected_gib_s -
                 progressive.stack->controller().stats().protected_gib_s;
  EXPECT_NEAR(saved, 6.0 / 1024 * 0.001, 1e-12);
}

}  // namespace
}  // namespace tempokv
