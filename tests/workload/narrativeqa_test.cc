#include "workload/narrativeqa.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "workload/tokens.h"

namespace tempokv {
namespace {

TEST(NarrativeQa, SameSeedGivesTheSameWorkload) {
  NarrativeQaOptions o;
  o.seed = 42;
  auto a = make_narrativeqa(o).value();
  auto b = make_narrativeqa(o).value();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prompt_tokens, b[i].prompt_tokens);
    EXPECT_EQ(a[i].output_tokens, b[i].output_tokens);
    ASSERT_EQ(a[i].chunks.size(), b[i].chunks.size());
    EXPECT_EQ(a[i].chunks.back().key, b[i].chunks.back().key);
  }
  o.seed = 43;
  auto c = make_narrativeqa(o).value();
  EXPECT_NE(a[0].chunks[0].key, c[0].chunks[0].key);
}

TEST(NarrativeQa, HasThePapersShape) {
  NarrativeQaOptions o;
  o.cache_ratio = 1.0;
  auto reqs = make_narrativeqa(o).value();
  ASSERT_EQ(reqs.size(), 12u);
  std::map<size_t, int> per_group;
  std::set<uint64_t> ids;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Request& r = reqs[i];
    ids.insert(r.id);
    EXPECT_EQ(r.arrival, std::chrono::milliseconds(500) * int64_t(i));
    const uint32_t doc = r.prompt_tokens - r.suffix_tokens;
    EXPECT_GE(r.suffix_tokens, 20u);
    EXPECT_LE(r.suffix_tokens, 60u);
    for (size_t g = 0; g < o.groups.size(); ++g) {
      if (doc >= o.groups[g].first && doc <= o.groups[g].second) ++per_group[g];
    }
    EXPECT_EQ(r.chunks.size(), doc / 256);  // the final partial chunk is not a chunk
    EXPECT_EQ(r.precomputed_chunks, doc / 256);
    EXPECT_EQ(r.chunks[0].bytes, 256u * 128 * 1024);  // Llama-3.1-8B: 128 KiB per token
    EXPECT_LE(r.chunks.back().tokens.end, doc);       // the question is never cached
    EXPECT_EQ(r.max_output_tokens, 128u);
    EXPECT_GE(r.output_tokens, 60u);
    EXPECT_LE(r.output_tokens, 128u);
    EXPECT_FALSE(r.writes_kv);
  }
  EXPECT_EQ(ids.size(), 12u);
  EXPECT_EQ(per_group[0], 4);
  EXPECT_EQ(per_group[1], 4);
  EXPECT_EQ(per_group[2], 4);
}

TEST(NarrativeQa, RatiosKeepWholeChunksOfTheSameDocuments) {
  NarrativeQaOptions o;
  auto full = make_narrativeqa(o).value();
  for (double ratio : {0.5, 0.75}) {
    o.cache_ratio = ratio;
    auto part = make_narrativeqa(o).value();
    for (size_t i = 0; i < part.size(); ++i) {
      const uint32_t doc = part[i].prompt_tokens - part[i].suffix_tokens;
      EXPECT_EQ(part[i].precomputed_chunks, static_cast<uint32_t>(ratio * doc / 256));
      EXPECT_EQ(part[i].chunks[0].key, full[i].chunks[0].key);  // same tokens, same keys
    }
  }
}

TEST(NarrativeQa, EqualPrefixesGiveEqualKeys) {
  std::vector<uint32_t> a, b;
  append_synthetic_tokens(5, 1024, a);
  b = a;
  b[900] ^= 1;  // differs in the fourth chunk only
  auto ca = chunk_prefix("llama-3.1-8b", a, 256, 1);
  auto cb = chunk_prefix("llama-3.1-8b", b, 256, 1);
  ASSERT_EQ(ca.size(), 4u);
  EXPECT_EQ(ca[2].key, cb[2].key);
  EXPECT_NE(ca[3].key, cb[3].key);
  EXPECT_EQ(ca[0].key.model, model_id("llama-3.1-8b"));
}

TEST(NarrativeQa, RejectsNonsense) {
  NarrativeQaOptions o;
  o.cache_ratio = 0;
  EXPECT_EQ(make_narrativeqa(o).status().code(), StatusCode::kInvalidArgument);
  o = {};
  o.model = "no-such-model";
  EXPECT_EQ(make_narrativeqa(o).status().code(), StatusCode::kNotFound);
  o.kv_bytes_per_token = 4096;  // explicit geometry needs no table entry
  EXPECT_TRUE(make_narrativeqa(o).is_ok());
}

// Lognormal outputs (the hidden truth's): a heavy tail the generation limit cuts, median near the
// asked one.
TEST(NarrativeQa, LognormalOutputsHaveATailUpToTheLimit) {
  NarrativeQaOptions o;
  o.docs_per_group = 34;
  o.max_output_tokens = 256;
  o.output_log_sigma = 0.9;
  o.output_median_tokens = 64;
  auto r = make_narrativeqa(o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 102u);
  std::vector<uint32_t> out;
  for (const Request& q : *r) out.push_back(q.output_tokens);
  std::sort(out.begin(), out.end());
  EXPECT_GE(out.front(), 1u);
  EXPECT_LE(out.back(), 256u);
  EXPECT_NEAR(double(out[out.size() / 2]), 64.0, 16.0);
  EXPECT_LT(out[5], 32u);     // the lower tail
  EXPECT_GT(out[96], 200u);   // and the upper one, up to the limit
  o.output_log_sigma = -1;
  EXPECT_EQ(make_narrativeqa(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tempokv
