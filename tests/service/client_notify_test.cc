// ServiceClient's retrieval: ready answers, wait answers and their notifications, dispatch().
#include <gtest/gtest.h>

#include <atomic>
#include <optional>

#include "service/client_test_util.h"

namespace tempokv {
namespace {

using service::Request;
using service::TierSpan;

const std::vector<TierSpan> kSpans{{0, 4096, 3}, {8192, 100, 4}};

// A daemon whose fast tier is 64 KiB, and a client that takes its spans without mapping it.
service::HelloResult with_tier() {
  service::HelloResult h;
  h.tier_bytes = 64 * 1024;
  return h;
}
ClientOptions unmapped(const FakeDaemon& daemon) {
  ClientOptions o = options_for(daemon);
  o.map_shared_memory = false;
  return o;
}

// What a RetrievalCallback was called with.
struct Seen {
  int calls = 0;
  uint64_t id = 0;
  std::optional<Result<RetrievalPath>> outcome;
  RetrievalCallback callback() {
    return [this](uint64_t claim, Result<RetrievalPath> r) {
      ++calls;
      id = claim;
      outcome = std::move(r);
    };
  }
};

TEST(ServiceClientRetrieval, ReadyAnswerExposesObjectsUntilEndTransfer) {
  FakeDaemon daemon(with_tier(), [](FakeDaemon& d, const Request& r) {
    if (!std::holds_alternative<service::RequestRetrieval>(r.op)) return false;
    d.send(service::encode_retrieval_reply(r.id, RetrievalAnswer::kReady, kSpans));
    return true;
  });
  auto client = connect_to(unmapped(daemon));
  ASSERT_NE(client, nullptr);
  Seen seen;
  auto answer = client->request_retrieval(5, seen.callback());
  ASSERT_TRUE(answer.is_ok());
  EXPECT_EQ(*answer, RetrievalAnswer::kReady);
  auto objects = client->objects(5);
  ASSERT_TRUE(objects.is_ok());
  EXPECT_EQ(*objects, kSpans);
  ASSERT_TRUE(client->begin_transfer(5).is_ok());
  ASSERT_TRUE(client->end_transfer(5).is_ok());
  EXPECT_EQ(client->objects(5).status().code(), StatusCode::kNotFound);
  client->dispatch();
  EXPECT_EQ(seen.calls, 0);  // a ready answer needs no callback
}

TEST(ServiceClientRetrieval, ASpanOutsideTheTierIsNeverHandedToACopy) {
  for (const TierSpan bad : {TierSpan{UINT64_MAX, 0, 1}, TierSpan{60 * 1024, 8192, 1},
                             TierSpan{0, 0, 1}}) {
    FakeDaemon daemon(with_tier(), [bad](FakeDaemon& d, const Request& r) {
      if (!std::holds_alternative<service::RequestRetrieval>(r.op)) return false;
      const std::vector<TierSpan> spans{{0, 4096, 1}, bad};
      d.send(service::encode_retrieval_reply(r.id, RetrievalAnswer::kReady, spans));
      return true;
    });
    auto client = connect_to(unmapped(daemon));
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(client->request_retrieval(5, nullptr).is_ok());
    auto objects = client->objects(5);
    EXPECT_EQ(objects.status().code(), StatusCode::kInternal)
        << "a span at " << bad.offset << " of " << bad.bytes << " bytes was served";
  }
}

TEST(ServiceClientRetrieval, WaitAnswerRunsTheCallbackFromDispatchOnTheReadyNotification) {
  FakeDaemon daemon(with_tier(), answer_wait);
  auto client = connect_to(unmapped(daemon));
  ASSERT_NE(client, nullptr);
  Seen seen;
  auto answer = client->request_retrieval(5, seen.callback());
  ASSERT_TRUE(answer.is_ok());
  EXPECT_EQ(*answer, RetrievalAnswer::kWait);
  EXPECT_EQ(client->objects(5).status().code(), StatusCode::kFailedPrecondition);

  daemon.push(service::encode_ready(5, RetrievalPath::kOrdinary, kSpans));
  ASSERT_TRUE(dispatch_until(*client, [&] { return seen.calls > 0; }));
  EXPECT_EQ(seen.calls, 1);
  EXPECT_EQ(seen.id, 5u);
  ASSERT_TRUE(seen.outcome->is_ok());
  EXPECT_EQ(seen.outcome->value(), RetrievalPath::kOrdinary);
  auto objects = client->objects(5);
  ASSERT_TRUE(objects.is_ok());
  EXPECT_EQ(*objects, kSpans);
  ASSERT_TRUE(client->cancel(5).is_ok());
  EXPECT_EQ(client->objects(5).status().code(), StatusCode::kNotFound);
}

TEST(ServiceClientRetrieval, FailedClaimNotificationPassesTheError) {
  FakeDaemon daemon(with_tier(), answer_wait);
  auto client = connect_to(unmapped(daemon));
  ASSERT_NE(client, nullptr);
  Seen seen;
  ASSERT_TRUE(client->request_retrieval(5, seen.callback()).is_ok());
  const Status failure = Status::io_error("read of object 2 failed");
  daemon.push(service::encode_ready(5, failure));
  ASSERT_TRUE(dispatch_until(*client, [&] { return seen.calls > 0; }));
  EXPECT_EQ(seen.outcome->status(), failure);
  EXPECT_EQ(client->objects(5).status().code(), StatusCode::kNotFound);
}

TEST(ServiceClientRetrieval, NotificationArrivingDuringACallIsQueuedAndDispatchedLater) {
  FakeDaemon daemon(with_tier(), [](FakeDaemon& d, const Request& r) {
    if (answer_wait(d, r)) return true;
    if (!std::holds_alternative<service::Heartbeat>(r.op)) return false;
    d.send(service::encode_ready(5, RetrievalPath::kStaged, kSpans));  // before the reply
    d.send(service::encode_reply(r.id));
    return true;
  });
  auto client = connect_to(unmapped(daemon));
  ASSERT_NE(client, nullptr);
  Seen seen;
  ASSERT_TRUE(client->request_retrieval(5, seen.callback()).is_ok());
  ASSERT_TRUE(client->heartbeat().is_ok());
  EXPECT_EQ(seen.calls, 0);  // never from inside another call
  EXPECT_TRUE(client->has_pending());
  client->dispatch();
  EXPECT_EQ(seen.calls, 1);
  EXPECT_FALSE(client->has_pending());
  auto objects = client->objects(5);
  ASSERT_TRUE(objects.is_ok());
  EXPECT_EQ(*objects, kSpans);
}

TEST(ServiceClientRetrieval, CallbackMayCallBackIn) {
  FakeDaemon daemon(with_tier(), answer_wait);
  auto client = connect_to(unmapped(daemon));
  ASSERT_NE(client, nullptr);
  Status begun = Status::internal("not called");
  ASSERT_TRUE(client
                  ->request_retrieval(5,
                                      [&](uint64_t id, Result<RetrievalPath>) {
                                        begun = client->begin_transfer(id);
                                        client->dispatch();
                                      })
                  .is_ok());
  daemon.push(service::encode_ready(5, RetrievalPath::kStaged, kSpans));
  ASSERT_TRUE(dispatch_until(*client, [&] { return begun.is_ok(); }));
  EXPECT_TRUE(std::holds_alternative<service::BeginTransfer>(daemon.requests().back().op));
}

TEST(ServiceClientRetrieval, NotificationForAnUnknownIdIsIgnored) {
  FakeDaemon daemon(with_tier(), answer_wait);
  auto client = connect_to(unmapped(daemon));
  ASSERT_NE(client, nullptr);
  Seen seen;
  ASSERT_TRUE(client->request_retrieval(5, seen.callback()).is_ok());
  daemon.push(service::encode_ready(99, RetrievalPath::kStaged, kSpans));
  daemon.push(service::encode_ready(5, RetrievalPath::kStaged, kSpans));
  ASSERT_TRUE(dispatch_until(*client, [&] { return seen.calls > 0; }));
  EXPECT_EQ(seen.id, 5u);
  EXPECT_EQ(client->objects(99).status().code(), StatusCode::kNotFound);
}

TEST(ServiceClientRetrieval, AWaitingClaimLostWithTheSessionFailsFromDispatchAfterANewHello) {
  // The daemon answers wait, then forgets the session (as a restarted one would): the next
  // request is refused, the client says hello again and the waiting claim fails as lost.
  std::atomic<bool> forgot{false};
  FakeDaemon daemon(with_tier(), [&](FakeDaemon& d, const Request& r) {
    if (answer_wait(d, r)) return true;
    if (std::holds_alternative<service::Heartbeat>(r.op) && !forgot.exchange(true)) {
      d.send(service::encode_error(
          r.id, Status::failed_precondition("heartbeat: the session has not said hello")));
      return true;
    }
    return false;
  });
  auto client = connect_to(unmapped(daemon));
  ASSERT_NE(client, nullptr);
  Seen seen;
  ASSERT_EQ(*client->request_retrieval(5, seen.callback()), RetrievalAnswer::kWait);
  ASSERT_TRUE(client->heartbeat().is_ok());  // refused, hello again, asked again
  EXPECT_EQ(client->recoveries(), 1u);
  EXPECT_EQ(seen.calls, 0);  // callbacks run only from dispatch()
  client->dispatch();
  ASSERT_EQ(seen.calls, 1);
  EXPECT_EQ(seen.id, 5u);
  EXPECT_EQ(seen.outcome->status().code(), StatusCode::kUnavailable);
  EXPECT_NE(seen.outcome->status().message().find("claim lost"), std::string::npos);
  const std::vector<Request> reqs = daemon.requests();
  ASSERT_GE(reqs.size(), 5u);  // hello, request_retrieval, heartbeat, hello, heartbeat
  EXPECT_TRUE(std::holds_alternative<service::Hello>(reqs[3].op));
}

}  // namespace
}  // namespace tempokv
