#include "workload/mooncake_trace.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <unordered_set>

namespace tempokv {
namespace {

constexpr const char* kInline =
    R"({"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [0, 1, 2]}
{"timestamp": 250, "input_length": 1300, "output_length": 7, "hash_ids": [0, 1, 3]}

{"timestamp": 1000, "input_length": 300, "output_length": 0, "hash_ids": [9]}
)";

std::vector<TraceRecord> inline_trace() {
  std::istringstream in(kInline);
  return parse_trace(in, "inline").value();
}

TEST(MooncakeTrace, ParsesRecordsSkippingBlankLines) {
  auto recs = inline_trace();
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[1].timestamp_ms, 250);
  EXPECT_EQ(recs[1].input_length, 1300u);
  EXPECT_EQ(recs[1].hash_ids, (std::vector<uint64_t>{0, 1, 3}));
}

TEST(MooncakeTrace, BadLineIsAnErrorNamingItsNumber) {
  std::istringstream in(
      "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [0]}\n"
      "{\"timestamp\": 1, \"input_length\": \"x\", \"output_length\": 1, \"hash_ids\": [0]}\n");
  auto r = parse_trace(in, "t.jsonl");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("t.jsonl:2"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("input_length"), std::string::npos);
  std::istringstream junk("{\"timestamp\": 0,\n");
  EXPECT_NE(parse_trace(junk, "j").status().message().find("j:1"), std::string::npos);
}

TEST(MooncakeTrace, BlocksBecomeTwoChunksAndSharedIdsShareKeys) {
  auto recs = inline_trace();
  TraceReplayOptions o;
  auto reqs = make_trace_requests(recs, o).value();
  ASSERT_EQ(reqs.size(), 3u);
  // 1100 tokens: blocks 0 and 1 whole (4 chunks), block 2 holds 76 tokens (no whole chunk).
  ASSERT_EQ(reqs[0].chunks.size(), 4u);
  EXPECT_EQ(reqs[0].suffix_tokens, 1100u - 1024);
  EXPECT_EQ(reqs[0].chunks[3].tokens, (TokenRange{768, 1024}));
  EXPECT_EQ(reqs[0].chunks[0].bytes, 256u * 128 * 1024);
  // 1300 tokens: blocks 0, 1 whole, block 3 has one whole chunk (1024..1280).
  ASSERT_EQ(reqs[1].chunks.size(), 5u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(reqs[0].chunks[i].key, reqs[1].chunks[i].key);
  EXPECT_TRUE(reqs[1].writes_kv);
  EXPECT_EQ(reqs[1].precomputed_chunks, 0u);
  EXPECT_EQ(reqs[1].arrival, std::chrono::milliseconds(250));
  EXPECT_EQ(reqs[2].output_tokens, 1u);  // zero-length outputs still produce the first token
  EXPECT_EQ(reqs[2].chunks.size(), 1u);
}

TEST(MooncakeTrace, WindowAndTimeScaleSelectAndStretchArrivals) {
  auto recs = inline_trace();
  TraceReplayOptions o;
  o.window_start = std::chrono::milliseconds(200);
  o.window_duration = std::chrono::milliseconds(1000);
  o.time_scale = 2.0;
  o.chunk_tokens = 512;
  auto reqs = make_trace_requests(recs, o).value();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].arrival, std::chrono::milliseconds(100));
  EXPECT_EQ(reqs[1].arrival, std::chrono::milliseconds(1600));
  EXPECT_EQ(reqs[0].chunks.size(), 2u);  // one chunk per block at 512 tokens
  o.chunk_tokens = 300;
  EXPECT_EQ(make_trace_requests(recs, o).status().code(), StatusCode::kInvalidArgument);
}

TEST(MooncakeTrace, ReadsTheSharedConversationTrace) {
  const std::string path = std::string(TEMPOKV_TRACE_DIR) + "/mooncake_conversation_trace.jsonl";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent; trace test skipped";
  auto recs = load_trace(path);
  ASSERT_TRUE(recs.is_ok()) << recs.status().to_string();
  EXPECT_EQ(recs->size(), 12031u);
  // The README's numbers: ~37 % of prompt blocks are prefix hits on earlier blocks.
  std::unordered_set<uint64_t> seen;
  uint64_t blocks = 0, hits = 0;
  for (const TraceRecord& r : *recs) {
    for (uint64_t h : r.hash_ids) {
      ++blocks;
      if (!seen.insert(h).second) ++hits;
    }
  }
  EXPECT_EQ(seen.size(), 182'790u);
  EXPECT_NEAR(double(hits) / double(blocks), 0.37, 0.02);
  TraceReplayOptions o;
  o.window_duration = std::chrono::minutes(5);
  auto reqs = make_trace_requests(*recs, o);
  ASSERT_TRUE(reqs.is_ok());
  EXPECT_GT(reqs->size(), 100u);
  EXPECT_LT(reqs->back().arrival, std::chrono::minutes(5));
}

}  // namespace
}  // namespace tempokv
