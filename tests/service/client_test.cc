// ServiceClient against a scripted fake daemon: hello and mappings, ids, errors, timeouts,
// writes. Retrieval and notifications are in client_notify_test.cc, the executor in
// client_loop_test.cc.
#include <gtest/gtest.h>

#include <chrono>

#include "common/checksum.h"
#include "service/client_test_util.h"

namespace tempokv {
namespace {

using service::Request;

TEST(ServiceClient, HelloNegotiatesAndMapsTheSharedFiles) {
  ShmFile tier("tier", 64 << 10), write("write", 32 << 10);
  const std::vector<std::byte> bytes = pattern(4096, 7);
  tier.write(8192, bytes);
  service::HelloResult h{.server = "fake",
                         .session = 42,
                         .runtime_id = 3,
                         .heartbeat_timeout_ms = 0,
                         .tier_path = tier.path(),
                         .tier_bytes = 64 << 10,
                         .write_path = write.path(),
                         .write_bytes = 32 << 10};
  FakeDaemon daemon(h);
  ClientOptions o = options_for(daemon);
  o.runtime = "engine-0";
  o.max_active = 8;
  auto client = connect_to(o);
  ASSERT_NE(client, nullptr);

  EXPECT_EQ(client->hello().server, "fake");
  EXPECT_EQ(client->hello().session, 42u);
  EXPECT_EQ(client->hello().runtime_id, 3u);
  ASSERT_NE(client->tier_data(), nullptr);
  EXPECT_EQ(client->tier_bytes(), uint64_t{64} << 10);
  EXPECT_EQ(std::memcmp(client->tier_data() + 8192, bytes.data(), bytes.size()), 0);

  const std::vector<Request> reqs = daemon.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].version, 1u);
  EXPECT_EQ(reqs[0].id, 1u);
  const auto& hello = std::get<service::Hello>(reqs[0].op);
  EXPECT_EQ(hello.versions, (std::vector<uint32_t>{1, 2, 3, 4}));  // every version it speaks
  EXPECT_EQ(hello.client, "client-test");
  EXPECT_EQ(hello.runtime, "engine-0");
  EXPECT_EQ(hello.max_active, 8u);
}

TEST(ServiceClient, WithoutMappingTierDataIsNull) {
  ShmFile tier("tier", 4096);
  FakeDaemon daemon({.tier_path = tier.path(), .tier_bytes = 4096});
  ClientOptions o = options_for(daemon);
  o.map_shared_memory = false;
  auto client = connect_to(o);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->tier_data(), nullptr);
  EXPECT_EQ(client->put(Key{1, 2}, {0, 16}, pattern(16, 1)).code(),
            StatusCode::kFailedPrecondition);
}

TEST(ServiceClient, ShortSharedFileFailsTheConnectAndEndsTheSession) {
  ShmFile tier("tier", 4096);
  FakeDaemon daemon({.tier_path = tier.path(), .tier_bytes = 8192});
  auto client = ServiceClient::connect(options_for(daemon));
  ASSERT_FALSE(client.is_ok());
  EXPECT_EQ(client.status().code(), StatusCode::kFailedPrecondition);
  const std::vector<Request> reqs = daemon.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<service::Bye>(reqs[1].op));
}

TEST(ServiceClient, EveryCallCarriesTheNextIdAndItsArguments) {
  FakeDaemon daemon({}, [](FakeDaemon& d, const Request& r) {
    if (std::holds_alternative<service::Lookup>(r.op)) {
      d.send(service::encode_lookup_reply(r.id, std::vector<uint64_t>{0, 4096}));
      return true;
    }
    if (std::holds_alternative<service::GetStats>(r.op)) {
      d.send(service::encode_stats_reply(r.id, {{"puts", 3}}));
      return true;
    }
    return false;
  });
  auto client = connect_to(options_for(daemon));
  ASSERT_NE(client, nullptr);
  RuntimeApi& api = *client;
  const std::vector<uint64_t> ids{5, 6};
  ASSERT_TRUE(api.add_request({.id = 5, .prompt_tokens = 100, .max_output_tokens = 9}).is_ok());
  ASSERT_TRUE(api.report_hit(5, {{Key{1, 2}, 4096}}).is_ok());
  ASSERT_TRUE(api.update_order(ids, std::chrono::milliseconds(5)).is_ok());
  ASSERT_TRUE(api.iteration_started(ids, {}).is_ok());
  ASSERT_TRUE(api.admitted(5).is_ok());
  ASSERT_TRUE(api.tokens_generated(5, 4).is_ok());
  ASSERT_TRUE(api.object_transferred(5, Key{1, 2}).is_ok());
  ASSERT_TRUE(client->heartbeat().is_ok());
  const std::vector<Key> keys{Key{1, 2}, Key{3, 4}};
  auto sizes = client->lookup(keys);
  ASSERT_TRUE(sizes.is_ok());
  EXPECT_EQ(*sizes, (std::vector<uint64_t>{0, 4096}));
  auto stats = client->stats();
  ASSERT_TRUE(stats.is_ok());
  EXPECT_EQ(*stats, (service::StatList{{"puts", 3.0}}));

  const std::vector<Request> reqs = daemon.requests();
  ASSERT_EQ(reqs.size(), 11u);
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(reqs[i].id, i + 1);
    // The hello is always written in version 1; then the version the fake daemon picked.
    EXPECT_EQ(reqs[i].version, i == 0 ? 1u : service::kProtocolVersion);
  }
  EXPECT_EQ(std::get<service::AddRequest>(reqs[1].op).request.prompt_tokens, 100u);
  EXPECT_EQ(std::get<service::ReportHit>(reqs[2].op).manifest.at(0).bytes, 4096u);
  EXPECT_EQ(std::get<service::UpdateOrder>(reqs[3].op).waiting, ids);
  EXPECT_EQ(std::get<service::UpdateOrder>(reqs[3].op).boundary_in_ns, 5'000'000);
  EXPECT_EQ(std::get<service::IterationStarted>(reqs[4].op).prefills, ids);
  EXPECT_EQ(std::get<service::TokensGenerated>(reqs[6].op).total_generated, 4u);
  EXPECT_EQ(std::get<service::ObjectTransferred>(reqs[7].op).key, (Key{1, 2}));
  EXPECT_TRUE(std::holds_alternative<service::Heartbeat>(reqs[8].op));
  EXPECT_EQ(std::get<service::Lookup>(reqs[9].op).keys, keys);
}

TEST(ServiceClient, ErrorReplyBecomesTheCallsStatus) {
  const Status refused = Status::not_found("admitted: unknown request 7");
  const Status garbled = Status::invalid_argument("request: missing field 'op'");
  FakeDaemon daemon({}, [&](FakeDaemon& d, const Request& r) {
    if (std::holds_alternative<service::Admitted>(r.op)) {
      d.send(service::encode_error(r.id, refused));
      return true;
    }
    if (std::holds_alternative<service::PrefillDone>(r.op)) {
      d.send(service::encode_error(std::nullopt, garbled));  // id unreadable: nil
      return true;
    }
    return false;
  });
  auto client = connect_to(options_for(daemon));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->admitted(7), refused);
  EXPECT_EQ(client->prefill_done(7), garbled);
  EXPECT_TRUE(client->finished(7, 3).is_ok());
}

TEST(ServiceClient, SilentDaemonIsUnavailableWithinTheTimeout) {
  FakeDaemon daemon({}, [](FakeDaemon&, const Request&) { return true; });
  ClientOptions o = options_for(daemon);
  o.call_timeout = std::chrono::milliseconds(100);
  const auto start = std::chrono::steady_clock::now();
  auto client = ServiceClient::connect(o);
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(client.is_ok());
  EXPECT_EQ(client.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(client.status().message().find(daemon.endpoint()), std::string::npos);
  EXPECT_GE(waited, std::chrono::milliseconds(100));
}

TEST(ServiceClient, LateReplyOfATimedOutCallIsDropped) {
  // admitted gets no answer in time; its reply comes just before the next call's.
  FakeDaemon daemon({}, [](FakeDaemon& d, const Request& r) {
    if (std::holds_alternative<service::Admitted>(r.op)) return true;
    if (!std::holds_alternative<service::Heartbeat>(r.op)) return false;
    d.send(service::encode_error(r.id - 1, Status::internal("too late")));
    d.send(service::encode_reply(r.id));
    return true;
  });
  ClientOptions o = options_for(daemon);
  o.call_timeout = std::chrono::milliseconds(100);
  auto client = connect_to(o);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->admitted(1).code(), StatusCode::kUnavailable);
  EXPECT_TRUE(client->heartbeat().is_ok());
}

TEST(ServiceClient, PipelinedReportsDoNotWaitAndTheirErrorsAreCounted) {
  const Status unknown = Status::not_found("tokens_generated: unknown request 9");
  FakeDaemon daemon({}, [&](FakeDaemon& d, const Request& r) {
    if (std::holds_alternative<service::Admitted>(r.op)) return true;  // never answered
    if (std::holds_alternative<service::TokensGenerated>(r.op)) {
      d.send(service::encode_error(r.id, unknown));
      return true;
    }
    return false;
  });
  ClientOptions o = options_for(daemon);
  o.call_timeout = std::chrono::milliseconds(100);
  o.pipeline_reports = true;
  auto client = connect_to(o);
  ASSERT_NE(client, nullptr);
  // Waiting for an answer that never comes would be Unavailable: these return once sent.
  EXPECT_TRUE(client->admitted(9).is_ok());
  EXPECT_TRUE(client->tokens_generated(9, 2).is_ok());
  // A call that waits meets the report's error reply on the way to its own.
  EXPECT_TRUE(client->heartbeat().is_ok());
  EXPECT_EQ(client->late_errors(), 1u);
  EXPECT_EQ(client->last_late_error(), unknown);
  EXPECT_EQ(client->calls(), 4u);  // hello, two reports, heartbeat
  const auto reqs = daemon.requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_TRUE(std::holds_alternative<service::Admitted>(reqs[1].op));
  EXPECT_TRUE(std::holds_alternative<service::TokensGenerated>(reqs[2].op));
  EXPECT_TRUE(std::holds_alternative<service::Heartbeat>(reqs[3].op));
  // Retrievals still wait: their answer is what the runtime acts on.
  EXPECT_EQ(client->request_retrieval(9, nullptr).status().code(), StatusCode::kInternal);
}

TEST(ServiceClient, PutWritesThePayloadAtTheReservedOffsetAndPutsIt) {
  ShmFile write("write", 64 << 10);
  FakeDaemon daemon({},
                    [&](FakeDaemon& d, const Request& r) {
                      if (!std::holds_alternative<service::ReserveWrite>(r.op)) return false;
                      d.send(service::encode_offset_reply(r.id, 8192, write.path(), 64 << 10));
                      return true;
                    });
  auto client = connect_to(options_for(daemon));
  ASSERT_NE(client, nullptr);
  const std::vector<std::byte> payload = pattern(100, 3);
  ASSERT_TRUE(client->put(Key{9, 10}, {16, 32}, payload).is_ok());

  EXPECT_EQ(write.read(8192, payload.size()), payload);
  const std::vector<Request> reqs = daemon.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(std::get<service::ReserveWrite>(reqs[1].op).bytes, 100u);
  const auto& put = std::get<service::Put>(reqs[2].op);
  EXPECT_EQ(put.key, (Key{9, 10}));
  EXPECT_EQ(put.tokens, (TokenRange{16, 32}));
  EXPECT_EQ(put.offset, 8192u);
  EXPECT_EQ(put.bytes, 100u);
  // The XXH3-128 of the caller's bytes, which the daemon checks the region's against.
  const Hash128 sum = xxh3_128(payload.data(), payload.size());
  EXPECT_EQ(put.checksum_low, sum.low);
  EXPECT_EQ(put.checksum_high, sum.high);
  EXPECT_EQ(client->write_region_path(), write.path());
}

TEST(ServiceClient, PutGivesBackAReservationOutsideTheRegion) {
  ShmFile write("write", 4096);
  FakeDaemon daemon({},
                    [&](FakeDaemon& d, const Request& r) {
                      if (!std::holds_alternative<service::ReserveWrite>(r.op)) return false;
                      d.send(service::encode_offset_reply(r.id, 4096, write.path(), 4096));
                      return true;
                    });
  auto client = connect_to(options_for(daemon));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->put(Key{9, 10}, {0, 16}, pattern(100, 3)).code(), StatusCode::kInternal);
  const std::vector<Request> reqs = daemon.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(std::get<service::AbortWrite>(reqs[2].op).offset, 4096u);
}

TEST(ServiceClient, ByeClosesTheClient) {
  FakeDaemon daemon;
  auto client = connect_to(options_for(daemon));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->bye().is_ok());
  EXPECT_EQ(client->admitted(1).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(client->heartbeat().code(), StatusCode::kFailedPrecondition);
  const std::vector<Request> reqs = daemon.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<service::Bye>(reqs[1].op));
}

TEST(ServiceClient, LastTtuIsNotAvailableThroughTheService) {
  FakeDaemon daemon;
  auto client = connect_to(options_for(daemon));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->last_ttu(1).status(),
            Status::failed_precondition("last_ttu is not available through the service"));
}

TEST(ClientOptions, ValidateNamesTheField) {
  ClientOptions o;
  EXPECT_NE(o.validate().message().find("endpoint"), std::string::npos);
  o.endpoint = "tcp://127.0.0.1:1";
  EXPECT_TRUE(o.validate().is_ok());
  o.call_timeout = Duration::zero();
  EXPECT_NE(o.validate().message().find("call_timeout"), std::string::npos);
}

TEST(ServiceClient, MalformedEndpointIsInvalidArgument) {
  ClientOptions o;
  o.endpoint = "no-such-transport";
  EXPECT_EQ(ServiceClient::connect(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tempokv
