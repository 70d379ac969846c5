// Protocol v4's step edits against a real tempokvd: a runtime whose steps give their decoders and
// waiting order as edits of the last step's ends in the very state of one sending them in full,
// and a step whose edits do not fit what the daemon holds is refused without guessing.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <thread>

#include "service/daemon_fixture.h"
#include "service/raw_peer.h"

namespace tempokv::testing {
namespace {

using service::Step;

// An engine's steps: requests join, the queue's head is admitted (its prefill in the step),
// decoders finish; every step measures the one before, so the adapter's cost scales follow the
// iterations' contents (which decoders, how long their contexts) exactly.
class Engine {
 public:
  explicit Engine(uint64_t seed) : rng_(seed) {}
  Step next() {
    Step s;
    for (uint64_t id : decoders_) {
      if (rng_() % 16 == 0) {
        s.finished.push_back({id, 10});
      } else {
        s.decoders.push_back(id);
      }
    }
    for (uint64_t id : prefilled_) s.decoders.push_back(id);  // their first token came
    prefilled_.clear();
    const size_t admit = std::min<size_t>(waiting_.size(), rng_() % 4);
    for (size_t i = 0; i < admit; ++i) {
      prefilled_.push_back(waiting_[i]);
      s.prefills.push_back({waiting_[i], prompt(waiting_[i])});
    }
    waiting_.erase(waiting_.begin(), waiting_.begin() + admit);
    for (uint64_t k = rng_() % 5; k > 0; --k, ++next_id_) {
      s.queued.push_back(RequestInfo{next_id_, prompt(next_id_), 0, 0, 64});
      waiting_.push_back(next_id_);
    }
    if (rng_() % 10 == 0) std::shuffle(waiting_.begin(), waiting_.end(), rng_);  // a priority
    s.waiting = waiting_;
    decoders_ = s.decoders;
    s.boundary_in_ns = 20'000'000;
    s.measures = true;
    if (seq_ > 0) s.measured = {{seq_, int64_t(10'000'000 + 37'000 * (seq_ % 50))}};
    ++seq_;
    return s;
  }

 private:
  static uint32_t prompt(uint64_t id) { return 512 + uint32_t(id * 97 % 3000); }
  std::mt19937_64 rng_;
  std::vector<uint64_t> decoders_, prefilled_, waiting_;
  uint64_t next_id_ = 1, seq_ = 0;
};

TEST_F(DaemonTest, StepsAsEditsLeaveTheRuntimeWhereStepsInFullDo) {
  auto edits = daemon_->connect("edits", "edits");
  auto full = daemon_->connect("full", "full", 0, false, /*step_edits=*/false);
  ASSERT_TRUE(edits.is_ok() && full.is_ok());
  ServiceClient& e = **edits;
  ServiceClient& f = **full;
  Engine a(7), b(7);
  for (int n = 0; n < 300; ++n) {
    ASSERT_TRUE(e.step(a.next()).is_ok());
    ASSERT_TRUE(f.step(b.next()).is_ok());
    if (n % 30 != 29) continue;
    ASSERT_TRUE(e.heartbeat().is_ok());
    ASSERT_TRUE(f.heartbeat().is_ok());
    ASSERT_EQ(e.late_errors(), 0u) << e.last_late_error().to_string();
    ASSERT_EQ(f.late_errors(), 0u) << f.last_late_error().to_string();
    for (const char* name :
         {"adapter_waiting_requests", "adapter_running_requests", "adapter_cost_scale",
          "adapter_decode_scale", "adapter_iterations_calibrated_total"}) {
      EXPECT_EQ(runtime_stat(e, name), runtime_stat(f, name)) << name << " after step " << n;
    }
  }
  EXPECT_GT(runtime_stat(e, "adapter_waiting_requests"), 50);
  EXPECT_GT(runtime_stat(e, "adapter_running_requests"), 15);
  // Most of the one runtime's steps went as edits (the shuffled orders in full), none of the
  // other's.
  const double steps_as_edits = stat_of(e, "step_edits_total");
  EXPECT_GT(steps_as_edits, 200);
  EXPECT_LT(steps_as_edits, 299);
}

// After the daemon restarts, the client's next step goes in full, though edits of its last one
// would be shorter: the new daemon holds no lists for them to edit.
TEST_F(DaemonTest, AfterARestartTheClientsFirstStepGoesInFull) {
  auto c = client();
  ASSERT_TRUE(c);
  const Step queue_all = queue_of(20);
  const Step same{.waiting = queue_all.waiting};
  ASSERT_TRUE(c->step(queue_all).is_ok());
  for (int n = 0; n < 4; ++n) ASSERT_TRUE(c->step(same).is_ok());
  ASSERT_TRUE(c->heartbeat().is_ok());
  EXPECT_EQ(stat_of(*c, "step_edits_total"), 4);
  ASSERT_EQ(daemon_->stop(), 0);
  ASSERT_TRUE(daemon_->start());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!c->heartbeat().is_ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(c->recoveries(), 1u);
  const uint64_t errors = c->late_errors();
  // The same lists again, the requests queued anew (the new daemon knows none of them).
  ASSERT_TRUE(c->step(queue_all).is_ok());
  ASSERT_TRUE(c->step(same).is_ok());
  ASSERT_TRUE(c->heartbeat().is_ok());
  EXPECT_EQ(c->late_errors(), errors) << c->last_late_error().to_string();
  EXPECT_EQ(stat_of(*c, "steps_total"), 2);
  EXPECT_EQ(stat_of(*c, "step_edits_total"), 1);
  EXPECT_EQ(runtime_stat(*c, "adapter_waiting_requests"), 20);
}

// A late error, read by the client before its next step (no call in between), sends that step
// in full: the client cannot tell whether the daemon still holds the lists its edits would edit.
TEST_F(DaemonTest, AfterALateErrorTheClientsNextStepGoesInFull) {
  auto c = client();
  ASSERT_TRUE(c);
  const Step queue_all = queue_of(20);
  const Step same{.waiting = queue_all.waiting};
  ASSERT_TRUE(c->step(queue_all).is_ok());
  ASSERT_TRUE(c->step(same).is_ok());
  Step bad = same;
  bad.decoders = {999};  // no request of the runtime: answered with an error
  ASSERT_TRUE(c->step(bad).is_ok());
  // Its error reply arrives meanwhile; nothing reads it before the next step.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(c->step(same).is_ok());
  ASSERT_TRUE(c->heartbeat().is_ok());
  EXPECT_EQ(c->late_errors(), 1u);
  EXPECT_EQ(stat_of(*c, "steps_total"), 4);
  EXPECT_EQ(stat_of(*c, "step_edits_total"), 2);  // steps 2 and 3, not 4
}

// A raw peer's step 2 edits a step the daemon never saw: refused, and so is step 3 editing
// step 2 (whose lists never applied), though its other parts are taken; step 4 in full is taken,
// and step 5's edits of it are.
TEST_F(DaemonTest, AStepEditingAnotherThanTheLastStepIsRefusedUntilOneComesInFull) {
  RawPeer peer(daemon_->endpoint());
  auto hello = peer.ask(request(1, service::Hello{{service::kProtocolVersion}, "raw"}));
  ASSERT_TRUE(hello.is_ok() && std::holds_alternative<service::Reply>(*hello));
  const std::string runtime = std::to_string(std::get<service::Reply>(*hello).hello->runtime_id);
  uint64_t id = 2;
  auto step = [&](Step s) {
    EXPECT_TRUE(peer.send(request(id++, std::move(s), service::kProtocolVersion), true));
  };
  auto sync = [&] {
    return peer.ask(request(id++, service::Heartbeat{}, service::kProtocolVersion));
  };
  step(Step{.seq = 1,
            .queued = {RequestInfo{1, 1024, 0, 0, 8}, RequestInfo{2, 1024, 0, 0, 8},
                       RequestInfo{3, 1024, 0, 0, 8}},
            .waiting = {1, 2, 3}});
  step(Step{.seq = 2, .base = 7, .waiting_taken = 1});
  expect_error(peer.receive(), StatusCode::kInvalidArgument,
               "step: base 7 is not the session's last step (1); send the decoders and the "
               "waiting order in full");
  // Its lists unknown, step 3's other parts are still taken: request 4 joins the runtime.
  step(Step{.seq = 3, .queued = {RequestInfo{4, 1024, 0, 0, 8}}, .base = 2, .waiting_taken = 1});
  expect_error(peer.receive(), StatusCode::kInvalidArgument,
               "step: base 2 is not the session's last step (none");
  step(Step{.seq = 4, .prefills = {{1, 1024}}, .waiting = {2, 3}});
  step(Step{.seq = 5, .admitted = {2}, .base = 4, .decoders_new = {1}, .waiting_taken = 1});
  // A gone decoder that is none: refused, naming the runtime's own id.
  step(Step{.seq = 6, .base = 5, .decoders_gone = {3}});
  expect_error(peer.receive(), StatusCode::kInvalidArgument,
               "decoders_gone lists request 3, not a decoder of step 5");
  auto hb = sync();
  ASSERT_TRUE(hb.is_ok()) << hb.status().to_string();
  if (const auto* e = std::get_if<service::ErrorReply>(&*hb)) FAIL() << e->error.to_string();
  // Steps 4 and 5 applied: 1 decodes, 2 loads, 3 waits (in the order) and 4 (queued by step 3,
  // in none).
  auto stats = peer.ask(request(id++, service::GetStats{}, service::kProtocolVersion));
  ASSERT_TRUE(stats.is_ok() && std::holds_alternative<service::Reply>(*stats));
  const service::StatList& s = std::get<service::Reply>(*stats).stats;
  EXPECT_EQ(stat(s, "adapter_waiting_requests_" + runtime), 2);
  EXPECT_EQ(stat(s, "adapter_running_requests_" + runtime), 2);
  EXPECT_EQ(stat(s, "step_edits_total"), 1);
  EXPECT_EQ(stat(s, "steps_total"), 6);
}

}  // namespace
}  // namespace tempokv::testing
