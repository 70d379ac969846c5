// ServiceClient attached to a RealExecutor: notifications without calls, heartbeats.
#include <gtest/gtest.h>

#include "executor/real_executor.h"
#include "service/client_test_util.h"

namespace tempokv {
namespace {

using service::Request;

TEST(ServiceClientLoop, AttachDispatchesANotificationWithoutAnyCall) {
  FakeDaemon daemon({}, answer_wait);
  RealExecutor executor;  // outlives the client, which detaches on destruction
  auto client = connect_to(options_for(daemon));
  ASSERT_NE(client, nullptr);
  int calls = 0;
  ASSERT_TRUE(
      client->request_retrieval(5, [&](uint64_t, Result<RetrievalPath>) { ++calls; }).is_ok());
  ASSERT_TRUE(client->attach(executor).is_ok());
  EXPECT_EQ(client->attach(executor).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(executor.watched(), 1u);

  daemon.push(service::encode_ready(5, RetrievalPath::kStaged, {}));
  executor.after(std::chrono::seconds(2), [&] { executor.stop(); });  // a guard, not a wait
  EXPECT_TRUE(executor.run_until([&] { return calls > 0; }));
  EXPECT_EQ(calls, 1);
  client.reset();
  EXPECT_EQ(executor.watched(), 0u);
}

TEST(ServiceClientLoop, NotificationQueuedByACallIsDispatchedByTheExecutor) {
  FakeDaemon daemon({}, [](FakeDaemon& d, const Request& r) {
    if (answer_wait(d, r)) return true;
    if (!std::holds_alternative<service::Heartbeat>(r.op)) return false;
    d.send(service::encode_ready(5, RetrievalPath::kStaged, {}));  // before the reply
    d.send(service::encode_reply(r.id));
    return true;
  });
  RealExecutor executor;
  auto client = connect_to(options_for(daemon));
  ASSERT_NE(client, nullptr);
  int calls = 0;
  ASSERT_TRUE(
      client->request_retrieval(5, [&](uint64_t, Result<RetrievalPath>) { ++calls; }).is_ok());
  ASSERT_TRUE(client->attach(executor).is_ok());
  // The call's wait consumed the socket's signal: only the dispatch it posts delivers this.
  ASSERT_TRUE(client->heartbeat().is_ok());
  EXPECT_EQ(calls, 0);
  executor.after(std::chrono::seconds(2), [&] { executor.stop(); });
  EXPECT_TRUE(executor.run_until([&] { return calls > 0; }));
}

TEST(ServiceClientLoop, AttachedClientSendsHeartbeatsWhileQuiet) {
  // heartbeat_timeout_ms 30: a heartbeat goes out after every quiet 10 ms.
  FakeDaemon daemon({.heartbeat_timeout_ms = 30});
  RealExecutor executor;
  auto client = connect_to(options_for(daemon));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->attach(executor).is_ok());
  executor.after(std::chrono::milliseconds(60), [&] { executor.stop(); });
  executor.run();
  client->detach();
  EXPECT_EQ(executor.watched(), 0u);

  const std::vector<Request> reqs = daemon.requests();
  ASSERT_GE(reqs.size(), 2u);
  for (size_t i = 1; i < reqs.size(); ++i) {
    EXPECT_TRUE(std::holds_alternative<service::Heartbeat>(reqs[i].op)) << i;
  }
}

}  // namespace
}  // namespace tempokv
