// The runtime adapter over the simulated stack: TTU projection feeds the controller.
#include "adapter/runtime_adapter.h"

#include <cmath>

#include <gtest/gtest.h>

#include "adapter_fixture.h"
#include "provider/sim_fixture.h"

namespace tempokv {
namespace {

using std::chrono::milliseconds;
using testing::claim_of;
using adapter_testing::AdapterFixture;

TEST(RuntimeAdapter, CommitsJustInTimeBehindARunningPredecessor) {
  AdapterFixture f;
  // The predecessor has generated 50 of a predicted 100 tokens: 50 steps of 10 ms = 500 ms.
  ASSERT_TRUE(f.adapter->add_request({1, 1000, 0, 0, 200}).is_ok());
  ASSERT_TRUE(f.adapter->admitted(1).is_ok());
  ASSERT_TRUE(f.adapter->prefill_done(1).is_ok());
  ASSERT_TRUE(f.adapter->tokens_generated(1, 50).is_ok());
  ASSERT_TRUE(f.adapter->add_request({2, 1000, 512, 2 * testing::kObj, 200}).is_ok());
  ASSERT_TRUE(f.adapter->report_hit(2, claim_of(2, {1, 2}).objects).is_ok());
  std::vector<uint64_t> waiting{2};
  ASSERT_TRUE(f.adapter->update_order(waiting).is_ok());
  EXPECT_EQ(f.adapter->last_ttu(2).value(), milliseconds(500));
  // TTR 125 ms: laxity reaches zero at 375 ms; ready just in time at 500 ms.
  f.stack.ex.run();
  auto info = f.controller->info(2).value();
  EXPECT_EQ(info.timeline.committed, f.stack.t0 + milliseconds(375));
  EXPECT_EQ(info.timeline.ready, f.stack.t0 + milliseconds(500));
}

TEST(RuntimeAdapter, UnknownAndDuplicateRequestsAreErrors) {
  AdapterFixture f;
  EXPECT_EQ(f.adapter->report_hit(9, claim_of(9, {1}).objects).code(), StatusCode::kNotFound);
  ASSERT_TRUE(f.adapter->add_request({1, 1000, 0, 0, 16}).is_ok());
  EXPECT_EQ(f.adapter->add_request({1, 1000, 0, 0, 16}).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(f.adapter->add_request({3, 10, 20, 0, 16}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.adapter->report_hit(1, {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.adapter->request_retrieval(1, nullptr).status().code(),
            StatusCode::kFailedPrecondition);
  std::vector<uint64_t> bad{7};
  EXPECT_EQ(f.adapter->update_order(bad).code(), StatusCode::kNotFound);
}

TEST(RuntimeAdapter, AnOrderListingAnAdmittedRequestLeavesItOut) {
  AdapterFixture f;  // one slot, 10 ms decode steps, prior output 100 tokens
  ASSERT_TRUE(f.adapter->add_request({1, 1000, 0, 0, 200}).is_ok());
  ASSERT_TRUE(f.adapter->add_request({2, 1000, 0, 0, 200}).is_ok());
  ASSERT_TRUE(f.adapter->admitted(1).is_ok());
  ASSERT_TRUE(f.adapter->prefill_done(1).is_ok());
  // Request 1's KV load failed: the runtime queues it again ahead of 2 to compute it.
  std::vector<uint64_t> waiting{1, 2};
  ASSERT_TRUE(f.adapter->update_order(waiting).is_ok());
  EXPECT_FALSE(f.adapter->last_ttu(1).is_ok()) << "not projected: it holds its slot";
  EXPECT_EQ(f.adapter->last_ttu(2).value(), milliseconds(990));  // 99 more steps of 1
  EXPECT_EQ(f.adapter->stats().waiting, 1u);
}

TEST(RuntimeAdapter, FinishedOutputsTrainThePredictor) {
  AdapterFixture f;
  ASSERT_TRUE(f.adapter->add_request({1, 100, 0, 0, 64}).is_ok());
  ASSERT_TRUE(f.adapter->admitted(1).is_ok());
  ASSERT_TRUE(f.adapter->finished(1, 40).is_ok());
  EXPECT_EQ(f.adapter->predictor().total(64), 40u);
  EXPECT_EQ(f.adapter->admitted(1).code(), StatusCode::kNotFound);
}

TEST(RuntimeAdapter, OrderUpdateMidIterationProjectsFromItsOwnEstimateOfTheBoundary) {
  AdapterFixture f;  // one slot, prior output 100 tokens, 10 ms decode steps
  f.profile.prefill_a_s = 0.020;  // a 20 ms prefill
  // The long horizon: updates 5 ms apart would otherwise leave request 2 (no claim) beyond the
  // rhythm's horizon, with no estimate (TheTtuHorizonFollowsTheRuntimesRhythm... covers that).
  f.adapter = RuntimeAdapter::create(*f.controller, f.profile,
                                     {.max_active = 1, .rhythm_horizon = false})
                  .value();
  ASSERT_TRUE(f.adapter->add_request({1, 1000, 0, 0, 4}).is_ok());  // limit 4 tokens
  ASSERT_TRUE(f.adapter->admitted(1).is_ok());
  std::vector<uint64_t> prefills{1};
  ASSERT_TRUE(f.adapter->iteration_started(prefills, {}).is_ok());
  f.stack.ex.run_for(milliseconds(15));
  ASSERT_TRUE(f.adapter->add_request({2, 1000, 0, 0, 4}).is_ok());
  std::vector<uint64_t> waiting{2};
  // The runtime's own hint is ignored: 5 ms of the 20 ms prefill are left by the adapter's
  // costs; then request 1 has its first token and 3 more steps of 10 ms follow.
  ASSERT_TRUE(f.adapter->update_order(waiting, milliseconds(500)).is_ok());
  EXPECT_EQ(f.adapter->last_ttu(2).value(), milliseconds(35));
  f.stack.ex.run_for(milliseconds(5));
  ASSERT_TRUE(f.adapter->prefill_done(1).is_ok());
  std::vector<uint64_t> decoders{1};
  ASSERT_TRUE(f.adapter->iteration_started({}, decoders).is_ok());
  ASSERT_TRUE(f.adapter->update_order(waiting).is_ok());
  EXPECT_EQ(f.adapter->last_ttu(2).value(), milliseconds(30));
  EXPECT_DOUBLE_EQ(f.adapter->cost_scale(), 1.0);  // the prefill took what the profile said
  EXPECT_EQ(f.adapter->iteration_started(std::vector<uint64_t>{2}, {}).code(),
            StatusCode::kFailedPrecondition);
}

// AdapterOptions::rhythm_horizon: the TTU horizon follows the runtime's rhythm
// (RuntimeAdapter::horizon_slack): before a gap
// between order updates is known it reaches 5 s past the commit window; with updates 10 ms apart,
// 20 ms. Beyond it a claim's TTU is a lower bound (no last_ttu) and a request without a claim has
// none, except that the first chain_span() claims of the order are projected exactly wherever
// they lie. One slot: each waiting request is admitted ~1 s (100 steps of 10 ms) after the one
// before it.
TEST(RuntimeAdapter, TheTtuHorizonFollowsTheRuntimesRhythmAndKeepsTheChainExact) {
  ControllerOptions full;
  full.ttu_horizon = false;
  AdapterFixture f, reference(full);
  f.adapter = RuntimeAdapter::create(*f.controller, f.profile,
                                     {.max_active = 1, .prior_output_tokens = 100,
                                      .rhythm_horizon = true})
                  .value();
  std::vector<uint64_t> waiting{2, 3, 4, 5, 6, 7, 8};
  for (AdapterFixture* a : {&f, &reference}) {
    ASSERT_TRUE(a->adapter->add_request({1, 1000, 0, 0, 400}).is_ok());
    ASSERT_TRUE(a->adapter->admitted(1).is_ok());
    ASSERT_TRUE(a->adapter->prefill_done(1).is_ok());
    for (uint64_t id : waiting) {
      const bool hit = id != 8;  // request 8 has no claim
      ASSERT_TRUE(a->adapter->add_request({id, 1000, hit ? 256u : 0u, hit ? testing::kObj : 0, 400})
                      .is_ok());
      if (hit) {
        ASSERT_TRUE(a->adapter->report_hit(id, claim_of(id, {id}).objects).is_ok());
      }
    }
  }
  std::vector<uint64_t> decoders{1};
  auto step = [&](AdapterFixture& a, uint32_t n) {
    ASSERT_TRUE(a.adapter->iteration_started({}, decoders).is_ok());
    ASSERT_TRUE(a.adapter->update_order(waiting).is_ok());
    a.stack.ex.run_for(milliseconds(10));
    ASSERT_TRUE(a.adapter->tokens_generated(1, n).is_ok());
  };
  step(f, 2);
  step(reference, 2);
  // No rhythm yet: 5 s past the window, so requests 2-6 (admitted at about 1-5 s) are exact.
  for (uint64_t id : {2, 3, 4, 5, 6}) {
    EXPECT_EQ(f.adapter->last_ttu(id).value(), reference.adapter->last_ttu(id).value()) << id;
  }
  for (uint32_t n = 3; n < 8; ++n) {
    step(f, n);
    step(reference, n);
  }
  // Updates 10 ms apart: the horizon is 20 ms past the window. Requests 2-5 hold the chain's
  // four claims: exact. Requests 6 and 7 (claims) and 8 (none): bounds only.
  for (uint64_t id : {2, 3, 4, 5}) {
    EXPECT_EQ(f.adapter->last_ttu(id).value(), reference.adapter->last_ttu(id).value()) << id;
  }
  for (uint64_t id : {6, 7, 8}) {
    EXPECT_FALSE(f.adapter->last_ttu(id).is_ok()) << id;
    EXPECT_TRUE(reference.adapter->last_ttu(id).is_ok()) << id;
  }
}

TEST(RuntimeAdapter, MeasuredIterationsCalibrateTheCostsItProjectsWith) {
  AdapterFixture f;  // 10 ms decode steps by the profile; the runtime takes 20 ms
  ASSERT_TRUE(f.adapter->add_request({1, 1000, 0, 0, 400}).is_ok());
  ASSERT_TRUE(f.adapter->admitted(1).is_ok());
  ASSERT_TRUE(f.adapter->prefill_done(1).is_ok());
  std::vector<uint64_t> decoders{1};
  for (uint32_t n = 2; n < 40; ++n) {
    ASSERT_TRUE(f.adapter->iteration_started({}, decoders).is_ok());
    f.stack.ex.run_for(milliseconds(20));
    ASSERT_TRUE(f.adapter->tokens_generated(1, n).is_ok());
  }
  EXPECT_NEAR(f.adapter->decode_cost_scale(), 2.0, 0.01);
  EXPECT_NEAR(f.adapter->cost_scale(), 2.0, 0.01);  // timed by its own clock: one scale for both
  ASSERT_TRUE(f.adapter->add_request({2, 1000, 0, 0, 400}).is_ok());
  std::vector<uint64_t> waiting{2};
  ASSERT_TRUE(f.adapter->update_order(waiting).is_ok());
  // 61 more tokens predicted (the prior of 100) at the measured ~20 ms, not the profile's 10 ms.
  EXPECT_NEAR(to_seconds(f.adapter->last_ttu(2).value()), 61 * 0.020, 0.01);
}

// A preemption the runtime reports: its recompute joins the open iteration (the boundary is
// projected after it and the measurement that includes it moves no scale), and the decoders'
// summed context sets the line above which the projection preempts.
TEST(RuntimeAdapter, AReportedPreemptionIsCostedAndSetsThePreemptionLine) {
  AdapterFixture f;  // 10 ms decode steps, prior output 100 tokens
  f.profile.prefill_b_s_per_token = 0.0001;  // a recompute of 1000 tokens: 100 ms
  AdapterOptions o{.max_active = 1, .prior_output_tokens = 100};
  o.pressure_deferral = 0;  // the projection itself (deferral: the next test)
  f.adapter = RuntimeAdapter::create(*f.controller, f.profile, o).value();
  ASSERT_TRUE(f.adapter->add_request({1, 999, 0, 0, 400}).is_ok());
  ASSERT_TRUE(f.adapter->admitted(1).is_ok());
  ASSERT_TRUE(f.adapter->prefill_done(1).is_ok());  // its first token: a context of 1000
  EXPECT_EQ(f.adapter->preempted(1).code(), StatusCode::kFailedPrecondition);  // no iteration
  EXPECT_EQ(f.adapter->preempted(9).code(), StatusCode::kNotFound);
  std::vector<uint64_t> decoders{1};
  ASSERT_TRUE(f.adapter->iteration_started({}, decoders).is_ok());
  EXPECT_EQ(f.adapter->preemption_line(), 0u);
  ASSERT_TRUE(f.adapter->preempted(1).is_ok());
  EXPECT_EQ(f.adapter->preemption_line(), 999u);
  ASSERT_TRUE(f.adapter->add_request({2, 1000, 0, 0, 400}).is_ok());
  std::vector<uint64_t> waiting{2};
  ASSERT_TRUE(f.adapter->update_order(waiting).is_ok());
  // The open iteration: its 10 ms step and the 100 ms recompute; then request 1's 98 more
  // predicted tokens at 10 ms, with no second recompute: it was preempted in this episode.
  EXPECT_EQ(f.adapter->last_ttu(2).value(), milliseconds(110 + 980));
  f.stack.ex.run_for(milliseconds(110));
  ASSERT_TRUE(f.adapter->tokens_generated(1, 2).is_ok());
  EXPECT_DOUBLE_EQ(f.adapter->cost_scale(), 1.0);  // the iteration took what was projected
}

// Pressure deferral: once the runtime has preempted, a claim whose request would be admitted into
// slots whose summed context passes pressure_deferral × the line is reported with no near use, so
// TempoKV leaves it to its retrieval request; off, it commits at once (its use, the boundary 110
// ms away, is nearer than its 125 ms read).
// With rhythm_horizon too: the claim is the order's first, projected exactly wherever it lies,
// but a deferred use stays a bound.
TEST(RuntimeAdapter, UnderPressureAClaimIsLeftToItsRetrievalRequest) {
  for (auto [deferral, rhythm] : {std::pair{0.0, false}, {0.7, false}, {0.0, true}, {0.7, true}}) {
    AdapterFixture f;  // 10 ms decode steps, prior output 100 tokens
    f.profile.prefill_b_s_per_token = 0.0001;
    AdapterOptions o{.max_active = 2, .prior_output_tokens = 100, .rhythm_horizon = rhythm};
    o.pressure_deferral = deferral;
    f.adapter = RuntimeAdapter::create(*f.controller, f.profile, o).value();
    ASSERT_TRUE(f.adapter->add_request({1, 999, 0, 0, 400}).is_ok());
    ASSERT_TRUE(f.adapter->admitted(1).is_ok());
    ASSERT_TRUE(f.adapter->prefill_done(1).is_ok());
    std::vector<uint64_t> decoders{1};
    ASSERT_TRUE(f.adapter->iteration_started({}, decoders).is_ok());
    ASSERT_TRUE(f.adapter->preempted(1).is_ok());  // the line: 999 tokens
    ASSERT_TRUE(f.adapter->add_request({2, 1000, 512, 2 * testing::kObj, 400}).is_ok());
    ASSERT_TRUE(f.adapter->report_hit(2, claim_of(2, {1, 2}).objects).is_ok());
    std::vector<uint64_t> waiting{2};
    ASSERT_TRUE(f.adapter->update_order(waiting).is_ok());
    f.stack.ex.run_for(milliseconds(50));
    // Admitted at the boundary beside request 1: 1002 + 1000 tokens, above 0.7 × 999.
    const auto committed = f.controller->info(2).value().timeline.committed;
    EXPECT_EQ(committed.has_value(), deferral == 0)
        << "pressure_deferral " << deferral << ", rhythm " << rhythm;
    EXPECT_EQ(f.adapter->last_ttu(2).is_ok(), deferral == 0) << "rhythm " << rhythm;
  }
  AdapterFixture f;
  AdapterOptions bad;
  bad.pressure_deferral = -1;
  EXPECT_EQ(RuntimeAdapter::create(*f.controller, f.profile, bad).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(RuntimeAdapter, AChunkedPrefillCostsEachChunkAfterTheTokensBeforeIt) {
  AdapterFixture f;
  f.profile.prefill_c_s_per_token2 = 1e-6;  // attention only: n² + 2·n·context µs
  f.adapter = RuntimeAdapter::create(*f.controller, f.profile, {.max_active = 1}).value();
  ASSERT_TRUE(f.adapter->add_request({1, 3000, 1000, 0, 4}).is_ok());  // 2000 tokens to compute
  ASSERT_TRUE(f.adapter->admitted(1).is_ok());
  std::vector<uint64_t> prefills{1};
  std::vector<uint32_t> chunk{1500};
  ASSERT_TRUE(f.adapter->iteration_started(prefills, chunk, {}).is_ok());
  EXPECT_EQ(f.adapter->open_iteration_cost().prefill, f.profile.prefill(1500, 1000));
  EXPECT_EQ(f.adapter->open_iteration_cost().decode, Duration::zero());
  chunk = {1500};  // more than the 500 left: the rest
  ASSERT_TRUE(f.adapter->iteration_started(prefills, chunk, {}).is_ok());
  EXPECT_EQ(f.adapter->open_iteration_cost().prefill, f.profile.prefill(500, 2500));
  EXPECT_EQ(f.adapter->iteration_started(prefills, std::vector<uint32_t>{1, 2}, {}).code(),
            StatusCode::kInvalidArgument);
}

// One slot. Request 1 runs, 5 more steps predicted (50 ms). Request 2 is next; its KV takes
// 500 ms to stage (8 objects, 2 reads at a time, 62.5 ms each). Request 3 waits behind it.
void queue_behind_a_request_with_a_hit(AdapterFixture& f, bool async_loads) {
  AdapterOptions o;
  o.max_active = 1;
  o.prior_output_tokens = 10;
  o.async_loads = async_loads;
  f.adapter = RuntimeAdapter::create(*f.controller, f.profile, o).value();
  ASSERT_TRUE(f.adapter->add_request({1, 1000, 0, 0, 100}).is_ok());
  ASSERT_TRUE(f.adapter->admitted(1).is_ok());
  ASSERT_TRUE(f.adapter->prefill_done(1).is_ok());
  ASSERT_TRUE(f.adapter->tokens_generated(1, 5).is_ok());
  ASSERT_TRUE(f.adapter->add_request({2, 1000, 999, 8 * testing::kObj, 100}).is_ok());
  ASSERT_TRUE(f.adapter->report_hit(2, claim_of(2, {1, 2, 3, 4, 5, 6, 7, 8}).objects).is_ok());
  ASSERT_TRUE(f.adapter->add_request({3, 1000, 0, 0, 100}).is_ok());
  ASSERT_TRUE(f.adapter->update_order(std::vector<uint64_t>{2, 3}).is_ok());
}

TEST(RuntimeAdapter, ARequestAheadWaitingForItsKvDelaysTheOnesBehind) {
  AdapterFixture f;
  queue_behind_a_request_with_a_hit(f, false);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  EXPECT_EQ(f.adapter->last_ttu(2).value(), milliseconds(50));
  // Request 2 holds the slot from 50 ms but runs only once its KV is ready at 500 ms: its first
  // token then, 9 more steps, and request 3 is admitted at 590 ms (140 ms if 2's KV were ready),
  // plus the 1 ns its 512 MiB copy takes at the fixture's link rate.
  EXPECT_EQ(f.adapter->last_ttu(3).value(), milliseconds(590) + Duration(1));
}

// The same queue on a runtime whose loads hold no slot (vLLM's, AdapterOptions::async_loads):
// when request 1 finishes at 50 ms, request 2's load starts and request 3 takes the slot at once.
TEST(RuntimeAdapter, WithAsyncLoadsARequestAheadLoadingItsKvLeavesTheSlotToTheOnesBehind) {
  AdapterFixture f;
  queue_behind_a_request_with_a_hit(f, true);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  EXPECT_EQ(f.adapter->last_ttu(2).value(), milliseconds(50));
  EXPECT_EQ(f.adapter->last_ttu(3).value(), milliseconds(50));
  // Request 2's load started (admitted, no chunk run): it still holds no slot.
  ASSERT_TRUE(f.adapter->admitted(2).is_ok());
  std::vector<uint64_t> waiting{3};
  ASSERT_TRUE(f.adapter->update_order(waiting).is_ok());
  EXPECT_EQ(f.adapter->last_ttu(3).value(), milliseconds(50));
}

// On vLLM the worker copies a load outside the steps: the copy is timed from begin_transfer to
// end_transfer against the profile's retrieval cost (the profile says 100 ms, it took 300 ms),
// and an iteration's cost (what calibrates the steps' cost scale) leaves it out. Charged to the
// prefill's step as in the emulated engine, it made that step's profile cost several times a
// decode step's and pulled the scale down after every load.
TEST(RuntimeAdapter, WithAsyncLoadsTheCopyIsTimedFromItsTransferAndNotChargedToAStep) {
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async loads" : "loads in the step");
    AdapterFixture f;
    f.profile.prefill_a_s = 0.020;
    f.profile.retrieval_bytes_per_s = double(testing::kObj) * 10;  // 100 ms per object
    AdapterOptions o;
    o.max_active = 1;
    o.async_loads = async;
    f.adapter = RuntimeAdapter::create(*f.controller, f.profile, o).value();
    EXPECT_EQ(f.adapter->load_scale(), 0.0);
    ASSERT_TRUE(f.adapter->add_request({1, 1000, 512, testing::kObj, 16}).is_ok());
    ASSERT_TRUE(f.adapter->report_hit(1, claim_of(1, {1}).objects).is_ok());
    ASSERT_TRUE(f.adapter->admitted(1).is_ok());
    ASSERT_EQ(*f.adapter->request_retrieval(1, nullptr), RetrievalAnswer::kWait);
    f.stack.ex.run();
    ASSERT_TRUE(f.adapter->begin_transfer(1).is_ok());
    f.stack.ex.run_for(milliseconds(300));
    ASSERT_TRUE(f.adapter->end_transfer(1).is_ok());
    EXPECT_NEAR(f.adapter->load_scale(), 3.0, 1e-9);
    EXPECT_NEAR(to_seconds(f.adapter->load_time(testing::kObj)), 0.300, 1e-9);
    std::vector<uint64_t> prefills{1};
    ASSERT_TRUE(f.adapter->iteration_started(prefills, {}).is_ok());
    const Duration prefill = f.profile.prefill(488, 512);  // 20 ms
    EXPECT_EQ(f.adapter->open_iteration_cost().total(),
              async ? prefill : prefill + f.profile.retrieval(testing::kObj));
  }
}

TEST(RuntimeAdapter, FinishingARequestCancelsItsUnreleasedClaim) {
  AdapterFixture f;
  ASSERT_TRUE(f.adapter->add_request({1, 1000, 512, 2 * testing::kObj, 16}).is_ok());
  // No order update yet: its TTU is unknown (far away), so it stays planned for now.
  ASSERT_TRUE(f.adapter->report_hit(1, claim_of(1, {1, 2}).objects).is_ok());
  ASSERT_EQ(f.controller->info(1)->state, ClaimState::kPlanned);
  // The request ends (aborted, or recomputed) before its claim is used: the claim must not stay
  // behind and commit later.
  ASSERT_TRUE(f.adapter->finished(1, 0).is_ok());
  EXPECT_EQ(f.controller->info(1)->state, ClaimState::kReleased);
  EXPECT_EQ(f.controller->stats().cancelled, 1u);
  f.stack.ex.run();
  EXPECT_EQ(f.controller->stats().commits, 0u);
  EXPECT_EQ(f.stack.tier->stats().reserved_bytes + f.stack.tier->stats().protected_bytes, 0u);
}

TEST(RuntimeAdapter, FinishingARequestWhileItsClaimIsCopiedEndsItAtEndTransfer) {
  AdapterFixture f;
  ASSERT_TRUE(f.adapter->add_request({1, 1000, 512, testing::kObj, 16}).is_ok());
  ASSERT_TRUE(f.adapter->report_hit(1, claim_of(1, {1}).objects).is_ok());
  ASSERT_TRUE(f.adapter->admitted(1).is_ok());
  ASSERT_EQ(*f.adapter->request_retrieval(1, nullptr), RetrievalAnswer::kWait);
  f.stack.ex.run();
  ASSERT_TRUE(f.adapter->begin_transfer(1).is_ok());
  ASSERT_TRUE(f.adapter->finished(1, 0).is_ok());
  EXPECT_EQ(f.stack.tier->stats().protected_bytes, testing::kObj);  // the copy still reads it
  ASSERT_TRUE(f.adapter->end_transfer(1).is_ok());
  EXPECT_EQ(f.controller->info(1)->state, ClaimState::kReleased);
  EXPECT_EQ(f.stack.tier->stats().protected_bytes, 0u);
}

TEST(RuntimeAdapter, CancellingARequestWhoseClaimWasReleasedOnlyForgetsIt) {
  AdapterFixture f;
  ASSERT_TRUE(f.adapter->add_request({1, 1000, 512, testing::kObj, 16}).is_ok());
  ASSERT_TRUE(f.adapter->report_hit(1, claim_of(1, {1}).objects).is_ok());
  ASSERT_TRUE(f.adapter->admitted(1).is_ok());
  ASSERT_EQ(*f.adapter->request_retrieval(1, nullptr), RetrievalAnswer::kWait);
  f.stack.ex.run();
  ASSERT_TRUE(f.adapter->begin_transfer(1).is_ok());
  ASSERT_TRUE(f.adapter->end_transfer(1).is_ok());
  ASSERT_EQ(f.controller->info(1)->state, ClaimState::kReleased);
  // vLLM preempts the running request (its KV is dropped, to be recomputed): the runtime
  // cancels it to forget it. Its claim ended with its copy: no error, nothing cancelled.
  ASSERT_TRUE(f.adapter->cancel(1).is_ok());
  EXPECT_EQ(f.controller->stats().cancelled, 0u);
  std::vector<uint64_t> waiting{1};
  EXPECT_EQ(f.adapter->update_order(waiting).code(), StatusCode::kNotFound);
  EXPECT_EQ(f.stack.tier->stats().reserved_bytes + f.stack.tier->stats().protected_bytes, 0u);
}

}  // namespace
}  // namespace tempokv

namespace tempokv {
namespace {

// A runtime that chunks prefills (100 tokens per iteration, 1 ms per prefill token): request 1's
// 300-token prefill is in its second chunk when request 2 arrives (100 ms before that iteration
// ends). At the boundary 100 tokens are left: one more 100 ms chunk gives the first token, then
// 99 decode steps of 10 ms. Projected as done at the boundary (the whole prefill at once), the
// slot would free 100 ms sooner.
TEST(RuntimeAdapter, ARunningChunkedPrefillIsProjectedChunkByChunk) {
  AdapterFixture f;
  f.profile.prefill_b_s_per_token = 0.001;
  AdapterOptions o;
  o.max_active = 1;
  o.prior_output_tokens = 100;
  o.token_budget = 100;
  f.adapter = RuntimeAdapter::create(*f.controller, f.profile, o).value();
  ASSERT_TRUE(f.adapter->add_request({1, 300, 0, 0, 400}).is_ok());
  ASSERT_TRUE(f.adapter->admitted(1).is_ok());
  std::vector<uint64_t> prefills{1};
  std::vector<uint32_t> chunk{100};
  ASSERT_TRUE(f.adapter->iteration_started(prefills, chunk, {}).is_ok());
  f.stack.ex.run_for(milliseconds(100));
  ASSERT_TRUE(f.adapter->iteration_started(prefills, chunk, {}).is_ok());
  ASSERT_TRUE(f.adapter->add_request({2, 100, 0, 0, 400}).is_ok());
  std::vector<uint64_t> waiting{2};
  ASSERT_TRUE(f.adapter->update_order(waiting).is_ok());
  EXPECT_EQ(f.adapter->last_ttu(2).value(), milliseconds(100 + 100 + 99 * 10));
}

TEST(RuntimeAdapter, OrderStatisticsAndAWaitQuantileAreOneOrTheOther) {
  AdapterOptions o;
  o.wait_order_statistics = true;
  EXPECT_TRUE(o.validate().is_ok());
  o.wait_quantile = 0.5;
  EXPECT_EQ(o.validate().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tempokv
