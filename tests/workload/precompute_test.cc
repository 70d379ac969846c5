#include "workload/precompute.h"

#include <gtest/gtest.h>

#include "executor/sim_executor.h"
#include "ssd/sim_ssd_engine.h"
#include "workload/narrativeqa.h"
#include "workload/tokens.h"

namespace tempokv {
namespace {

TEST(Precompute, PutsEachPrecomputedChunkOnce) {
  SimExecutor ex;
  SsdEngineOptions eo;
  eo.kind = SsdEngineKind::kSimulated;
  SimSsdEngine ssd(ex, eo);
  StoreOptions so;
  so.simulated = true;
  so.capacity_bytes = 1ULL << 40;
  so.max_object_bytes = 64ULL << 20;
  auto store = Store::open(ex, ssd, so).value();
  NarrativeQaOptions o;
  o.cache_ratio = 0.5;
  auto reqs = make_narrativeqa(o).value();
  reqs.push_back(reqs[0]);  // a repeated document is put once
  reqs.back().id = 99;
  std::optional<Result<PrecomputeStats>> done;
  precompute_kv(*store, reqs, {}, [&](Result<PrecomputeStats> r) { done = std::move(r); });
  ex.run();
  ASSERT_TRUE(done.has_value());
  ASSERT_TRUE(done->is_ok()) << done->status().to_string();
  uint64_t want = 0;
  for (size_t i = 0; i + 1 < reqs.size(); ++i) want += reqs[i].precomputed_chunks;
  EXPECT_EQ((*done)->chunks, want);
  EXPECT_EQ((*done)->skipped, reqs[0].precomputed_chunks);
  for (const Request& r : reqs) {
    EXPECT_TRUE(store->contains(r.chunks[r.precomputed_chunks - 1].key));
    EXPECT_FALSE(store->contains(r.chunks[r.precomputed_chunks].key));
  }
}

TEST(ChunkBytes, MatchAcceptsExactlyTheFilledContent) {
  const Key key{7, 0x1234};
  for (size_t bytes : {size_t(4096), size_t(4099), size_t(3)}) {
    std::vector<std::byte> content(bytes);
    fill_chunk_bytes(key, content);
    EXPECT_TRUE(chunk_bytes_match(key, content)) << bytes;
    EXPECT_FALSE(chunk_bytes_match(Key{7, 0x1235}, content)) << bytes;
    content[bytes - 1] ^= std::byte{1};  // the tail after the last whole word counts too
    EXPECT_FALSE(chunk_bytes_match(key, content)) << bytes;
  }
}

}  // namespace
}  // namespace tempokv
