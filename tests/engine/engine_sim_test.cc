// The emulated engine in simulated mode with jitter 0: exact times from the test profile
// (engine_fixture.h) and the iteration model shared with the TTU estimator.
#include <gtest/gtest.h>

#include "engine/engine_fixture.h"

namespace tempokv::testing {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

const RequestRecord& only(const ServingEngine& e) {
  static std::vector<RequestRecord> recs;
  recs = e.records();
  EXPECT_EQ(recs.size(), 1u);
  return recs.front();
}

TEST(EngineSim, RequestWithoutHitHasTtftOfItsPrefill) {
  EngineStack s;
  ServingEngine& e = s.add_engine(exact_options());
  std::vector<Request> reqs{make_request(1, 11, 1000, 0, 0, 3)};
  ASSERT_TRUE(e.submit(reqs, s.ex.now()).is_ok());
  s.ex.run();
  ASSERT_TRUE(e.done());
  const RequestRecord& r = only(e);
  EXPECT_EQ(r.path, RequestPath::kNoHit);
  CostProfile p = exact_profile();
  EXPECT_EQ(r.ttft(), p.prefill(1000));
  EXPECT_EQ(r.ttft(), milliseconds(20));
  // Two decode steps after the first token: context 1001, then 1002.
  EXPECT_EQ(*r.finished - *r.first_token, p.decode_step(1001, 1) + p.decode_step(1002, 1));
  EXPECT_EQ(r.output_tokens, 3u);
}

TEST(EngineSim, DemandHitWaitsForStagingThenRetrievesThenPrefills) {
  EngineStack s("demand");
  ServingEngine& e = s.add_engine(exact_options());
  // 8 whole chunks (2048 tokens) of a 2080-token prompt, all precomputed.
  std::vector<Request> reqs{make_request(1, 12, 2048, 32, 8, 2)};
  TimePoint start = s.precompute(reqs);
  ASSERT_TRUE(e.submit(reqs, start).is_ok());
  s.ex.run();
  ASSERT_TRUE(e.done());
  const RequestRecord& r = only(e);
  EXPECT_EQ(r.path, RequestPath::kStaged);
  EXPECT_EQ(r.hit_chunks, 8u);
  EXPECT_EQ(r.cached_tokens, 2048u);
  // Staging: 8 MiB at 1 MiB/ms = 8 ms; retrieval: 1 ms + 8 ms; prefill of 32 tokens: 10.32 ms.
  const Duration staging = milliseconds(8);
  EXPECT_EQ(*r.committed, start);
  EXPECT_EQ(*r.ready, start + staging);
  EXPECT_EQ(*r.retrieval_start, start + staging);
  EXPECT_EQ(*r.retrieval_end, start + staging + milliseconds(9));
  EXPECT_EQ(r.ttft(),
            staging + exact_profile().retrieval(8 * kChunkBytes) + exact_profile().prefill(32));
  EXPECT_EQ(r.ttft(), microseconds(27'320));
  EXPECT_EQ(s.controller->stats().released, 1u);
  EXPECT_EQ(s.tier->stats().protected_bytes, 0u);
}

TEST(EngineSim, SecondRequestIsAdmittedWhenTheFirstFinishesAsTheTtuProjected) {
  EngineStack s("tempokv");
  EngineOptions o = exact_options(/*max_active=*/1);
  o.prior_output_tokens = 5;  // the true output length of both
  ServingEngine& e = s.add_engine(o);
  std::vector<Request> reqs{make_request(1, 21, 1000, 0, 0, 5), make_request(2, 22, 1500, 0, 0, 5)};
  ASSERT_TRUE(e.submit(reqs, s.ex.now()).is_ok());
  s.ex.run();
  ASSERT_TRUE(e.done());
  auto recs = e.records();
  ASSERT_EQ(recs.size(), 2u);
  const RequestRecord& first = recs[0];
  const RequestRecord& second = recs[1];
  EXPECT_EQ(*second.admitted, *first.finished);
  ASSERT_TRUE(second.first_ttu.has_value());
  EXPECT_EQ(*second.first_ttu_at + *second.first_ttu, *second.admitted);
  CostProfile p = exact_profile();
  Duration decode = p.decode_step(1001, 1) + p.decode_step(1002, 1) + p.decode_step(1003, 1) +
                    p.decode_step(1004, 1);
  EXPECT_EQ(*second.admitted - first.arrival, p.prefill(1000) + decode);
}

TEST(EngineSim, ArrivalDuringAFullIterationIsProjectedExactly) {
  // Request 2 arrives 1 ms into request 1's prefill with every slot taken: the adapter knows the
  // running iteration's work (iteration_started) and projects from its end, so the TTU lands on
  // the admission exactly.
  EngineStack s("tempokv");
  EngineOptions o = exact_options(1);
  o.prior_output_tokens = 5;
  ServingEngine& e = s.add_engine(o);
  std::vector<Request> reqs{make_request(1, 21, 1000, 0, 0, 5),
                            make_request(2, 22, 1500, 0, 0, 5, milliseconds(1))};
  ASSERT_TRUE(e.submit(reqs, s.ex.now()).is_ok());
  s.ex.run();
  auto recs = e.records();
  EXPECT_EQ(*recs[1].first_ttu_at + *recs[1].first_ttu, *recs[1].admitted);
}

TEST(EngineSim, TtuOfAWaitingClaimIsExactAtEveryBoundary) {
  // Request 2 waits behind request 1 with a hit; under demand nothing commits early, and each
  // projection made at a boundary must land on its admission.
  EngineStack s("demand");
  EngineOptions o = exact_options(1);
  o.prior_output_tokens = 4;
  ServingEngine& e = s.add_engine(o);
  std::vector<Request> reqs{make_request(1, 31, 1024, 16, 0, 4),
                            make_request(2, 32, 2048, 16, 8, 4)};
  TimePoint start = s.precompute(reqs);
  ASSERT_TRUE(e.submit(reqs, start).is_ok());
  s.ex.run();
  auto recs = e.records();
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(*recs[1].first_ttu_at, start);
  EXPECT_EQ(start + *recs[1].first_ttu, *recs[1].admitted);
  EXPECT_EQ(recs[1].path, RequestPath::kStaged);
}

TEST(EngineSim, EnginesShareStoreTierProviderAndController) {
  EngineStack s("immediate");
  ServingEngine& a = s.add_engine(exact_options());
  EngineOptions ob = exact_options();
  ob.engine_id = 1;
  ServingEngine& b = s.add_engine(ob);
  // The same 8-chunk document behind different questions, one request per engine.
  std::vector<Request> ra{make_request(1, 41, 2048, 20, 8, 3)};
  std::vector<Request> rb{make_request(2, 41, 2048, 40, 8, 3)};
  TimePoint start = s.precompute(ra);
  ASSERT_TRUE(a.submit(ra, start).is_ok());
  ASSERT_TRUE(b.submit(rb, start).is_ok());
  s.ex.run();
  ASSERT_TRUE(a.done());
  ASSERT_TRUE(b.done());
  EXPECT_EQ(a.records()[0].path, RequestPath::kStaged);
  EXPECT_EQ(b.records()[0].path, RequestPath::kStaged);
  EXPECT_EQ(b.records()[0].engine, 1u);
  // Shared objects were read once and counted once.
  EXPECT_EQ(s.provider->stats().bytes_read, 8 * kChunkBytes);
  EXPECT_EQ(s.controller->stats().commits, 2u);
  EXPECT_EQ(*a.records()[0].ready, start + milliseconds(8));
  EXPECT_EQ(*b.records()[0].ready, start + milliseconds(8));
  EXPECT_TRUE(s.provider->check_invariants().is_ok());
}

TEST(EngineSim, FailedStagingFallsBackToRecomputingThePrompt) {
  EngineStack s("demand");
  ServingEngine& e = s.add_engine(exact_options());
  std::vector<Request> reqs{make_request(1, 51, 2048, 32, 8, 2)};
  TimePoint start = s.precompute(reqs);
  s.faults->fail_next_reads(1);
  ASSERT_TRUE(e.submit(reqs, start).is_ok());
  s.ex.run();
  ASSERT_TRUE(e.done());
  const RequestRecord& r = only(e);
  EXPECT_EQ(r.path, RequestPath::kRecompute);
  EXPECT_FALSE(r.failure.empty());
  EXPECT_EQ(r.prefill_tokens, 2080u);
  EXPECT_EQ(r.ttft(), exact_profile().prefill(2080));
  EXPECT_EQ(e.stats().recomputes, 1u);
  EXPECT_FALSE(r.retrieval_start.has_value());
}

TEST(EngineSim, BaselineRetrievesOnDemandWithoutClaims) {
  EngineStack s;
  EngineOptions o = exact_options();
  o.baseline = true;
  ServingEngine& e = s.add_engine(o);
  EXPECT_EQ(e.adapter(), nullptr);
  std::vector<Request> reqs{make_request(1, 61, 2048, 32, 8, 2)};
  TimePoint start = s.precompute(reqs);
  ASSERT_TRUE(e.submit(reqs, start).is_ok());
  s.ex.run();
  ASSERT_TRUE(e.done());
  const RequestRecord& r = only(e);
  EXPECT_EQ(r.path, RequestPath::kOrdinary);
  EXPECT_EQ(r.ttft(), microseconds(27'320));  // demand reads 8 ms + retrieval 9 ms + prefill
  EXPECT_EQ(s.controller->stats().reported, 0u);
  EXPECT_EQ(s.tier->stats().protected_bytes + s.tier->stats().reserved_bytes, 0u);
  EXPECT_EQ(s.tier->stats().resident_bytes, 8 * kChunkBytes);  // left as LRU cache
}

TEST(EngineSim, ProducedKvIsWrittenAndHitsALaterRequest) {
  EngineStack s;
  ServingEngine& e = s.add_engine(exact_options());
  Request a = make_request(1, 71, 1024, 10, 0, 2);
  Request b = make_request(2, 71, 1024, 10, 0, 2, milliseconds(500));
  a.writes_kv = b.writes_kv = true;
  ASSERT_TRUE(e.submit({a, b}, s.ex.now()).is_ok());
  s.ex.run();
  auto recs = e.records();
  EXPECT_EQ(recs[0].path, RequestPath::kNoHit);
  EXPECT_EQ(recs[1].path, RequestPath::kStaged);
  EXPECT_EQ(recs[1].hit_chunks, 4u);
  EXPECT_EQ(s.writer->stats().puts, 4u);
}

TEST(EngineSim, JitterIsSeededAndMovesStepTimes) {
  auto run = [](uint64_t seed) {
    EngineStack s;
    EngineOptions o = exact_options();
    o.jitter_sigma = 0.05;
    o.seed = seed;
    ServingEngine& e = s.add_engine(o);
    std::vector<Request> reqs{make_request(1, 81, 1000, 0, 0, 20),
                              make_request(2, 82, 3000, 0, 0, 20, milliseconds(5))};
    EXPECT_TRUE(e.submit(reqs, s.ex.now()).is_ok());
    s.ex.run();
    return std::make_pair(*e.records()[0].finished, *e.records()[1].finished);
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

}  // namespace
}  // namespace tempokv::testing
