// ServiceClient when the daemon goes away during a call, against a scripted fake daemon: the
// heartbeat thread runs while the call waits, so a put in flight when the daemon dies fails at
// once (saying whether it was stored is unknown), and one in flight when the daemon restarts is
// put again in the new session (a put of the same bytes is a success).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "service/client_test_util.h"

namespace tempokv {
namespace {

using Clock = std::chrono::steady_clock;
using service::Request;
using ::testing::HasSubstr;

// A call timeout far above what the heartbeat needs to find out (a 600 ms heartbeat timeout:
// heartbeats every 200 ms, probes of an overdue reply after 200 ms).
constexpr auto kCallTimeout = std::chrono::seconds(10);

ClientOptions slow_call_options(const FakeDaemon& daemon) {
  ClientOptions o = options_for(daemon);
  o.call_timeout = kCallTimeout;
  return o;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

TEST(ServiceClientRecovery, APutInFlightWhenTheDaemonDiesFailsAtOnceSayingItsOutcomeIsUnknown) {
  ShmFile write("write", 64 << 10);
  std::atomic<bool> put_seen{false};
  auto daemon = std::make_unique<FakeDaemon>(
      service::HelloResult{
          .heartbeat_timeout_ms = 600},
      [&](FakeDaemon& d, const Request& r) {
        if (std::holds_alternative<service::ReserveWrite>(r.op)) {
          d.send(service::encode_offset_reply(r.id, 0, write.path(), 64 << 10));
          return true;
        }
        if (std::holds_alternative<service::Put>(r.op)) {
          put_seen = true;  // never answered: the daemon dies with the put in flight
          return true;
        }
        return false;
      });
  auto client = connect_to(slow_call_options(*daemon));
  ASSERT_NE(client, nullptr);
  std::thread killer([&] {
    while (!put_seen) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    daemon.reset();  // its socket closes: the connection is gone
  });
  const Clock::time_point start = Clock::now();
  Status st = client->put(Key{9, 1}, {0, 16}, pattern(100, 1));
  const double took_s = seconds_since(start);
  killer.join();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.to_string();
  EXPECT_THAT(st.message(), HasSubstr("whether the object was stored is unknown"));
  EXPECT_THAT(st.message(), HasSubstr("put the same bytes again"));
  EXPECT_LT(took_s, 3.0) << "the put waited " << took_s << " s for a daemon that was gone";
  // While the daemon is known down, a call fails without waiting for a connection.
  const Clock::time_point again = Clock::now();
  EXPECT_EQ(client->heartbeat().code(), StatusCode::kUnavailable);
  EXPECT_LT(seconds_since(again), 1.0);
}

TEST(ServiceClientRecovery, APutInFlightWhenTheDaemonRestartsIsPutAgainInTheNewSession) {
  ShmFile write("write", 64 << 10);
  // 0: serving; 1: restarted (every session forgotten, the first put never answered);
  // 2: serving the new session.
  std::atomic<int> phase{0};
  auto hello = [&](uint64_t instance) {
    return service::HelloResult{.session = instance,
                                .heartbeat_timeout_ms = 600,
                                .instance = instance};
  };
  FakeDaemon daemon(hello(1), [&](FakeDaemon& d, const Request& r) {
    const bool is_hello = std::holds_alternative<service::Hello>(r.op);
    if (phase == 1) {
      if (is_hello) {
        d.send(service::encode_hello_reply(r.id, hello(2)));
        phase = 2;
      } else {
        d.send(service::encode_error(
            r.id, Status::failed_precondition(std::string(service::op_name(r.op)) +
                                              ": the session has not said hello")));
      }
      return true;
    }
    if (std::holds_alternative<service::ReserveWrite>(r.op)) {
      d.send(service::encode_offset_reply(r.id, 0, write.path(), 64 << 10));
      return true;
    }
    if (std::holds_alternative<service::Put>(r.op) && phase == 0) {
      phase = 1;  // restarted before it could answer
      return true;
    }
    return false;
  });
  auto client = connect_to(slow_call_options(daemon));
  ASSERT_NE(client, nullptr);
  const Clock::time_point start = Clock::now();
  Status st = client->put(Key{9, 2}, {0, 16}, pattern(100, 2));
  const double took_s = seconds_since(start);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_LT(took_s, 3.0) << "the put took " << took_s << " s";
  EXPECT_EQ(client->recoveries(), 1u);
  EXPECT_EQ(client->hello().instance, 2u);
  int hellos = 0, puts = 0;
  for (const Request& r : daemon.requests()) {
    hellos += std::holds_alternative<service::Hello>(r.op);
    puts += std::holds_alternative<service::Put>(r.op);
  }
  EXPECT_EQ(hellos, 2);
  EXPECT_EQ(puts, 2);  // the same bytes, put once more in the new session
}

TEST(ServiceClientRecovery, HeartbeatsGoOnWhileACallWaits) {
  // The daemon takes 1.5 s over one call: the session is kept alive meanwhile, and the call,
  // answered in the end, succeeds (the daemon answered every probe).
  std::atomic<uint64_t> slow_id{0};
  FakeDaemon daemon(service::HelloResult{.heartbeat_timeout_ms = 600},
                    [&](FakeDaemon&, const Request& r) {
                      if (!std::holds_alternative<service::Admitted>(r.op)) return false;
                      slow_id = r.id;  // answered later, by the replier below
                      return true;
                    });
  auto client = connect_to(slow_call_options(daemon));
  ASSERT_NE(client, nullptr);
  std::thread replier([&] {
    while (slow_id == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    daemon.push(service::encode_reply(slow_id));
  });
  EXPECT_TRUE(client->admitted(7).is_ok());
  replier.join();
  int heartbeats = 0;
  for (const Request& r : daemon.requests()) {
    heartbeats += std::holds_alternative<service::Heartbeat>(r.op);
  }
  EXPECT_GE(heartbeats, 2) << "no heartbeat went out while the call waited";
}

}  // namespace
}  // namespace tempokv
