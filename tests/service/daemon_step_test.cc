// Protocol v2's step op against a real tempokvd: one fire-and-forget message per scheduler
// iteration drives a request from the queue to its end; a bad step comes back as a late error.
#include <gtest/gtest.h>

#include <cmath>

#include "service/daemon_fixture.h"

namespace tempokv::testing {
namespace {

using service::Step;

TEST_F(DaemonTest, StepsDriveARequestThroughItsLifeWithoutWaitingForReplies) {
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_EQ(c->hello().version, service::kProtocolVersion);
  auto m = put_objects(*c, 900, 2);
  const RequestInfo r{1, 2048, 512, 2 * kObject, 16};
  ASSERT_TRUE(c->step(Step{.queued = {r}, .waiting = {1}}).is_ok());
  // The daemon handles a session's messages in order: the step queued request 1 before this.
  ASSERT_TRUE(c->report_hit(1, m).is_ok());
  ASSERT_TRUE(c->step(Step{.prefills = {{1, 1536}}}).is_ok());
  EXPECT_EQ(c->admitted(1).code(), StatusCode::kFailedPrecondition) << "the step admitted it";
  bool ready = false;
  auto answer = c->request_retrieval(1, [&](ClaimId, Result<RetrievalPath>) { ready = true; });
  ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
  if (*answer == RetrievalAnswer::kWait) {
    ASSERT_TRUE(wait_for(*c, [&] { return ready; }));
  }
  expect_bytes(*c, 1, m);
  ASSERT_TRUE(c->begin_transfer(1).is_ok());
  ASSERT_TRUE(c->end_transfer(1).is_ok());
  ASSERT_TRUE(c->step(Step{.decoders = {1}}).is_ok());  // the prefill produced its first token
  ASSERT_TRUE(c->step(Step{.decoders = {1}}).is_ok());
  ASSERT_TRUE(c->step(Step{.finished = {{1, 3}}}).is_ok());
  // Finished: the id is free again, and nothing went wrong on the way.
  EXPECT_TRUE(c->add_request(r).is_ok());
  EXPECT_EQ(c->late_errors(), 0u) << c->last_late_error().to_string();
  EXPECT_EQ(stat_of(*c, "steps_total"), 5);
  EXPECT_EQ(stat_of(*c, "steps_missed_total"), 0);
  EXPECT_EQ(stat_of(*c, "tier_protected_bytes"), 0);
  // A step naming a request the runtime does not know is answered with a late error.
  ASSERT_TRUE(c->step(Step{.decoders = {999}}).is_ok());
  ASSERT_TRUE(c->heartbeat().is_ok());
  EXPECT_EQ(c->late_errors(), 1u);
  EXPECT_EQ(c->last_late_error().code(), StatusCode::kNotFound)
      << c->last_late_error().to_string();
}

// Ids reach the adapter salted per runtime: an error puts back the runtime's own id wherever the
// step lists it (here after the 600 ids it names before), never the salted one.
TEST_F(DaemonTest, AStepErrorNamesTheRuntimesOwnIdWhereverTheStepListsIt) {
  auto c = client();
  ASSERT_TRUE(c);
  Step s = queue_of(300);
  s.decoders = s.waiting;
  s.decoders.push_back(424242);
  ASSERT_TRUE(c->step(s).is_ok());
  ASSERT_TRUE(c->heartbeat().is_ok());
  ASSERT_EQ(c->late_errors(), 1u);
  EXPECT_EQ(c->last_late_error().code(), StatusCode::kNotFound);
  EXPECT_NE(c->last_late_error().message().find("request 424242 is not known"),
            std::string::npos)
      << c->last_late_error().to_string();
}

TEST_F(DaemonTest, AnOrderListingRequestsThatEndedLeavesThemOut) {
  auto c = client();
  ASSERT_TRUE(c);
  auto m = put_objects(*c, 700, 1);
  ASSERT_TRUE(c->add_request(RequestInfo{1, 1024, 256, kObject, 8}).is_ok());
  ASSERT_TRUE(c->report_hit(1, m).is_ok());
  ASSERT_TRUE(c->add_request(RequestInfo{2, 1024, 0, 0, 8}).is_ok());
  ASSERT_TRUE(c->add_request(RequestInfo{3, 1024, 0, 0, 8}).is_ok());
  ASSERT_TRUE(c->add_request(RequestInfo{4, 1024, 0, 0, 8}).is_ok());
  ASSERT_TRUE(c->cancel(1).is_ok());        // its claim ended (the runtime preempted it)
  ASSERT_TRUE(c->finished(2, 0).is_ok());   // aborted while queued
  ASSERT_TRUE(c->admitted(3).is_ok());      // scheduled, then queued again (a failed load)
  // A runtime's queue may still list all three: the order is 4 alone, in v1 and v2.
  EXPECT_TRUE(c->update_order(std::vector<uint64_t>{1, 2, 3, 4}).is_ok());
  ASSERT_TRUE(c->step(Step{.waiting = {3, 2, 1, 4}}).is_ok());
  ASSERT_TRUE(c->heartbeat().is_ok());
  EXPECT_EQ(c->late_errors(), 0u) << c->last_late_error().to_string();
  EXPECT_EQ(runtime_stat(*c, "adapter_waiting_requests"), 1);
  // An id the runtime never had is still an error.
  EXPECT_EQ(c->update_order(std::vector<uint64_t>{4, 99}).code(), StatusCode::kNotFound);
}

// A step that repeats the last one's order and decoders is not checked again (service_step.cc)
// while no request was added or ended: one that ends between two equal steps is left out of the
// order the second time, and a decoder that finished is refused.
TEST_F(DaemonTest, AStepRepeatingTheLastOnesListsSeesTheRequestsThatEndedBetween) {
  auto c = client();
  ASSERT_TRUE(c);
  Step first{.queued = {RequestInfo{1, 1024, 0, 0, 8}, RequestInfo{2, 1024, 0, 0, 8},
                        RequestInfo{3, 1024, 0, 0, 8}, RequestInfo{4, 1024, 0, 0, 8}},
             .prefills = {{4, 1024}},
             .waiting = {1, 2, 3}};
  ASSERT_TRUE(c->step(first).is_ok());
  const Step again{.decoders = {4}, .waiting = {1, 2, 3}};
  ASSERT_TRUE(c->step(again).is_ok());
  ASSERT_TRUE(c->step(again).is_ok());
  ASSERT_TRUE(c->heartbeat().is_ok());
  ASSERT_EQ(c->late_errors(), 0u) << c->last_late_error().to_string();
  EXPECT_EQ(runtime_stat(*c, "adapter_waiting_requests"), 3);
  ASSERT_TRUE(c->finished(2, 0).is_ok());  // aborted while queued
  ASSERT_TRUE(c->step(again).is_ok());
  ASSERT_TRUE(c->heartbeat().is_ok());
  ASSERT_EQ(c->late_errors(), 0u) << c->last_late_error().to_string();
  EXPECT_EQ(runtime_stat(*c, "adapter_waiting_requests"), 2);
  const Step decoding{.decoders = {4}, .waiting = {1, 3}};
  ASSERT_TRUE(c->step(decoding).is_ok());
  ASSERT_TRUE(c->finished(4, 3).is_ok());
  ASSERT_TRUE(c->step(decoding).is_ok());
  ASSERT_TRUE(c->heartbeat().is_ok());
  ASSERT_EQ(c->late_errors(), 1u);
  EXPECT_NE(c->last_late_error().message().find("step: request 4 is not known"),
            std::string::npos)
      << c->last_late_error().to_string();
}

TEST_F(DaemonTest, ARuntimesMeasuredStepTimesCalibrateItsAdapterAndArrivalTimesDoNot) {
  auto c = client();
  ASSERT_TRUE(c);
  const RequestInfo r1{1, 4096, 0, 0, 16}, r2{2, 4096, 0, 0, 16};
  // Step 1 queues both and declares (measured, empty) that the runtime measures its steps.
  ASSERT_TRUE(c->step(Step{.queued = {r1, r2}, .waiting = {1, 2}, .measures = true}).is_ok());
  // Step 2: request 1 prefills a 2048-token chunk; request 2 is scheduled, its KV loading.
  ASSERT_TRUE(
      c->step(Step{.prefills = {{1, 2048}}, .waiting = {}, .admitted = {2}, .measures = true})
          .is_ok());
  EXPECT_EQ(runtime_stat(*c, "adapter_running_requests"), 2);
  EXPECT_EQ(runtime_stat(*c, "adapter_waiting_requests"), 0);
  // Step 3 (an asynchronous scheduler's: it measures step 2's iteration one step late): the
  // first measurement sets the scale (RuntimeAdapter::calibrate's first weight is 1). A
  // measurement of a step the daemon never saw (99) is ignored.
  ASSERT_TRUE(c->step(Step{.prefills = {{1, 2048}},
                           .measured = {{99, 1'000'000}},
                           .measures = true})
                  .is_ok());
  ASSERT_TRUE(c->step(Step{.decoders = {1},
                           .measured = {{2, int64_t(1'000'000'000)}},
                           .measures = true})
                  .is_ok());
  EXPECT_EQ(c->late_errors(), 0u) << c->last_late_error().to_string();
  EXPECT_EQ(runtime_stat(*c, "adapter_iterations_calibrated_total"), 1);
  EXPECT_EQ(runtime_stat(*c, "adapter_runtime_measures"), 1);
  const double first = runtime_stat(*c, "adapter_cost_scale");
  EXPECT_GT(first, 1.0);  // a second for a chunk the CPU profile costs at a few ms
  // Step 5 measures step 4's decode at an hour, far above any profile's cost. It is the first
  // decode-only measurement: the decode scale, which followed the prefill scale, takes it
  // clamped at 4x that scale; the prefill scale is not moved.
  ASSERT_TRUE(c->step(Step{.decoders = {1},
                           .measured = {{4, int64_t(3600) * 1'000'000'000}},
                           .measures = true})
                  .is_ok());
  EXPECT_EQ(c->late_errors(), 0u) << c->last_late_error().to_string();
  EXPECT_EQ(runtime_stat(*c, "adapter_iterations_calibrated_total"), 2);
  // Neither moved by the milliseconds between the steps' arrivals (the prefill_done of step 4).
  EXPECT_NEAR(runtime_stat(*c, "adapter_decode_scale"), 4 * first, 1e-6 * first);
  EXPECT_NEAR(runtime_stat(*c, "adapter_cost_scale"), first, 1e-6 * first);
  ASSERT_TRUE(c->step(Step{.finished = {{1, 2}, {2, 0}}}).is_ok());
  EXPECT_EQ(runtime_stat(*c, "adapter_running_requests"), 0);
}

TEST_F(DaemonTest, AHellosTokenBudgetProjectsTheRuntimesPrefillsChunkByChunk) {
  auto chunked = daemon_->connect("chunked", "vllm", 512);
  ASSERT_TRUE(chunked.is_ok()) << chunked.status().to_string();
  auto whole = client();
  ASSERT_TRUE(whole);
  EXPECT_EQ(runtime_stat(**chunked, "adapter_token_budget"), 512);
  EXPECT_EQ(runtime_stat(*whole, "adapter_token_budget"), 0);
  // A second rank joining the runtime does not change it (the first hello created it).
  auto rank1 = daemon_->connect("chunked", "vllm-rank1", 4096);
  ASSERT_TRUE(rank1.is_ok()) << rank1.status().to_string();
  EXPECT_EQ(runtime_stat(**rank1, "adapter_token_budget"), 512);
}

// vLLM's connector declares its loads asynchronous (they hold no slot); a runtime created by
// another hello keeps the emulated engine's rule.
TEST_F(DaemonTest, AHellosAsyncLoadsReachTheRuntimesAdapter) {
  auto vllm = daemon_->connect("vllm-engine", "vllm-scheduler", 2048, true);
  ASSERT_TRUE(vllm.is_ok()) << vllm.status().to_string();
  auto plain = client();
  ASSERT_TRUE(plain);
  EXPECT_EQ(runtime_stat(**vllm, "adapter_async_loads"), 1);
  EXPECT_EQ(runtime_stat(*plain, "adapter_async_loads"), 0);
  EXPECT_EQ(runtime_stat(**vllm, "adapter_load_scale"), 0);  // no copy measured yet
}

// TempoKV's runtimes project the queue wait with the order statistics of the decoders'
// completions (the daemon's default policy, "tempokv"); tempokv-no-order-stats's with the means.
TEST_F(DaemonTest, TempoKvsRuntimesProjectTheWaitWithOrderStatistics) {
  auto c = client("engine");
  ASSERT_TRUE(c);
  EXPECT_EQ(runtime_stat(*c, "adapter_wait_order_statistics"), 1);
}

class DaemonMeansTest : public DaemonTest {
 protected:
  std::vector<std::string> extra_args() const override {
    return {"--set", "controller.policy=tempokv-no-order-stats"};
  }
};

TEST_F(DaemonMeansTest, TheNoOrderStatsRuntimesProjectTheWaitWithTheMeans) {
  auto c = client("engine");
  ASSERT_TRUE(c);
  EXPECT_EQ(runtime_stat(*c, "adapter_wait_order_statistics"), 0);
}

}  // namespace
}  // namespace tempokv::testing
