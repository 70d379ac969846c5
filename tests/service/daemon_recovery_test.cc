// Clients that recover (issue 13): against a real tempokvd that is stopped and started again,
// the C++ client heartbeats in the background, says hello again to the new instance, maps its
// new shared files, reports claims lost in the restart as errors, and fails fast while the
// daemon is down, even with a call in flight when it stops answering (a put then succeeds when
// made again).
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>

#include "service/daemon_fixture.h"

namespace tempokv::testing {
namespace {

using Clock = std::chrono::steady_clock;

// A lookup, retried while a restarted daemon is not reachable yet (the socket reconnects within
// about 100 ms).
Result<std::vector<uint64_t>> lookup_when_back(ServiceClient& c, std::span<const Key> keys) {
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(5);
  for (;;) {
    auto sizes = c.lookup(keys);
    if (sizes.is_ok() || sizes.status().code() != StatusCode::kUnavailable ||
        Clock::now() > deadline) {
      return sizes;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

class ShortHeartbeatDaemonTest : public DaemonTest {
 protected:
  std::vector<std::string> extra_args() const override {
    return {"--set", "server.heartbeat_timeout_ms=1500"};
  }
};

TEST_F(ShortHeartbeatDaemonTest, AnIdleClientKeepsItsSessionPastTheHeartbeatTimeout) {
  auto c = client();
  ASSERT_TRUE(c);
  auto m = put_objects(*c, 800, 1);
  ASSERT_TRUE(c->add_request({1, 2048, 256, kObject, 16}).is_ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(4000));  // 2.7 timeouts, no call
  // The same session: its request is still known, and nothing had to be said again.
  EXPECT_TRUE(c->report_hit(1, m).is_ok());
  EXPECT_EQ(c->recoveries(), 0u);
  EXPECT_EQ(stat_of(*c, "sessions_closed_total"), 0);
}

TEST_F(DaemonTest, AClientRecoversFromADaemonRestartAndReportsItsLostClaims) {
  auto c = client();
  ASSERT_TRUE(c);
  const uint64_t first_instance = c->hello().instance;
  EXPECT_NE(first_instance, 0u);
  auto m = put_objects(*c, 820, 2);
  stage(*c, 1, m);  // ready: its spans point into the old tier
  ASSERT_EQ(daemon_->stop(), 0);
  ASSERT_TRUE(daemon_->start());
  // The first call that reaches the new daemon finds the session gone, says hello again and
  // goes through.
  std::vector<Key> keys{m[0].key, m[1].key};
  auto sizes = lookup_when_back(*c, keys);
  ASSERT_TRUE(sizes.is_ok()) << sizes.status().to_string();
  EXPECT_EQ(*sizes, (std::vector<uint64_t>{kObject, kObject}));  // the store kept them
  EXPECT_EQ(c->recoveries(), 1u);
  EXPECT_NE(c->hello().instance, first_instance);
  EXPECT_EQ(c->objects(1).status().code(), StatusCode::kUnavailable);  // lost in the restart
  // The new tier is mapped: a claim's bytes read right.
  stage(*c, 2, m);
  expect_bytes(*c, 2, m);
  ASSERT_TRUE(c->begin_transfer(2).is_ok());
  ASSERT_TRUE(c->end_transfer(2).is_ok());
  auto other = client();
  ASSERT_TRUE(other);
  EXPECT_EQ(stat_of(*other, "sessions"), 2);
}

TEST_F(DaemonTest, ALookupAgainstADaemonThatIsDownFailsFast) {
  auto c = client();  // call_timeout 5 s; lookup_timeout the default
  ASSERT_TRUE(c);
  auto m = put_objects(*c, 860, 1);
  ASSERT_EQ(daemon_->stop(), 0);
  std::vector<Key> keys{m[0].key};
  const Clock::time_point start = Clock::now();
  auto sizes = c->lookup(keys);
  const double took_s = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(sizes.status().code(), StatusCode::kUnavailable) << sizes.status().to_string();
  // Not the call timeout: the default lookup timeout is a quarter of a second.
  EXPECT_LT(took_s, 2.5) << "a lookup waited " << took_s << " s for a daemon that is down";
  ASSERT_TRUE(daemon_->start());
  // Back up: the same client finds it again.
  auto again = lookup_when_back(*c, keys);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ((*again)[0], kObject);
}

TEST_F(DaemonTest, ACallInFlightWhenTheDaemonStopsAnsweringFailsFastAndAPutMadeAgainSucceeds) {
  ClientOptions o;
  o.endpoint = daemon_->endpoint();
  o.call_timeout = std::chrono::seconds(15);  // heartbeats every 1.3 s (a 4 s timeout)
  auto c = ServiceClient::connect(o);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  const Key key{1, 880};
  const std::vector<std::byte> bytes = payload(880);
  // The daemon freezes (as a hung process does): the put's first request is never answered.
  ASSERT_EQ(kill(daemon_->pid(), SIGSTOP), 0);
  const Clock::time_point start = Clock::now();
  Status st = (*c)->put(key, TokenRange{0, 256}, bytes);
  const double took_s = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.to_string();
  // Not the call timeout: the heartbeat thread probed the silent daemon meanwhile.
  EXPECT_LT(took_s, 5.0) << "the put waited " << took_s << " s for a daemon that was stopped";
  // It dies that way and comes back: the same put, made again, succeeds in a new session.
  ASSERT_EQ(kill(daemon_->pid(), SIGKILL), 0);
  daemon_->stop();  // reaps it
  ASSERT_TRUE(daemon_->start());
  Status again;
  for (int i = 0; i < 50; ++i) {
    again = (*c)->put(key, TokenRange{0, 256}, bytes);
    if (again.code() != StatusCode::kUnavailable) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(again.is_ok()) << again.to_string();
  EXPECT_GE((*c)->recoveries(), 1u);
  std::vector<Key> keys{key};
  auto sizes = (*c)->lookup(keys);
  ASSERT_TRUE(sizes.is_ok()) << sizes.status().to_string();
  EXPECT_EQ((*sizes)[0], bytes.size());
  // And once more: the bytes already stored are a success, nothing written.
  EXPECT_TRUE((*c)->put(key, TokenRange{0, 256}, bytes).is_ok());
}

}  // namespace
}  // namespace tempokv::testing
