// Protocol v2's step op against a real tempokvd: one fire-and-forget message per scheduler
// iteration drives a request from the queue to its end; a bad step comes back as a late error.
#include <gtest/gtest.h>

#include "service/daemon_fixture.h"

namespace tempokv::testing {
namespace {

using service::Step;

TEST_F(DaemonTest, StepsDriveARequestThroughItsLifeWithoutWaitingForReplies) {
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_EQ(c->hello().version, 2u);
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

}  // namespace
}  // namespace tempokv::testing
