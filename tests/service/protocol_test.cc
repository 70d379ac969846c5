#include "tempokv/protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <functional>
#include <string>

#include "protocol/wire.h"

namespace tempokv::service {
namespace {

using ::testing::HasSubstr;

std::vector<Request> one_of_every_op() {
  RequestInfo info{.id = 7,
                   .prompt_tokens = 4096,
                   .cached_tokens = 2048,
                   .cached_bytes = 123456789012ULL,
                   .max_output_tokens = 256};
  std::vector<Op> ops = {
      Hello{{1, 2}, "vllm-rank0", "engine-a", 8, 2, "", 2048, true},
      Heartbeat{},
      AddRequest{info},
      ReportHit{7, {{Key{1, 2}, 4096}, {Key{1, UINT64_MAX}, 1}}},
      UpdateOrder{{7, 3, UINT64_MAX}, 1500000},
      IterationStarted{{7}, {3, 4}},
      Admitted{7},
      PrefillDone{7},
      TokensGenerated{7, 12},
      Finished{7, UINT32_MAX},
      RequestRetrieval{7},
      BeginTransfer{7},
      EndTransfer{7},
      ObjectTransferred{7, Key{UINT64_MAX, 9}},
      Cancel{7},
      Bye{},
      Lookup{{Key{1, 2}, Key{3, UINT64_MAX}}},
      ReserveWrite{1 << 20},
      Put{Key{5, 6}, TokenRange{256, 512}, 4096, 1000, UINT64_MAX, 3},
      AbortWrite{8192},
      GetStats{},
      Step{.seq = 9,
           .queued = {info},
           .finished = {{3, 128}},
           .prefills = {{7, 512}},
           .decoders = {4, UINT64_MAX},
           .waiting = {8, 9},
           .boundary_in_ns = 2500000},
  };
  std::vector<Request> out;
  uint64_t id = 100;
  for (Op& op : ops) out.push_back(Request{kProtocolVersion, id++, std::move(op)});
  return out;
}

TEST(ProtocolTest, EveryOpRoundTripsToTheSameBytes) {
  auto requests = one_of_every_op();
  ASSERT_EQ(requests.size(), std::variant_size_v<Op>);
  for (const Request& r : requests) {
    SCOPED_TRACE(std::string(op_name(r.op)));
    std::vector<std::byte> bytes = encode_request(r);
    std::optional<uint64_t> id;
    Result<Request> back = decode_request(bytes, &id);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(id, r.id);
    EXPECT_EQ(back->id, r.id);
    EXPECT_EQ(back->version, kProtocolVersion);
    EXPECT_EQ(back->op.index(), r.op.index());
    EXPECT_EQ(encode_request(*back), bytes);
  }
}

TEST(ProtocolTest, DecodedFieldsKeepTheirValues) {
  auto requests = one_of_every_op();
  auto decoded = [&](size_t i) { return decode_request(encode_request(requests[i])).value().op; };
  const auto hello = std::get<Hello>(decoded(0));
  EXPECT_EQ(hello.versions, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(hello.client, "vllm-rank0");
  EXPECT_EQ(hello.runtime, "engine-a");
  EXPECT_EQ(hello.max_active, 8u);
  EXPECT_EQ(hello.ranks, 2u);
  EXPECT_EQ(hello.token_budget, 2048u);
  EXPECT_TRUE(hello.async_loads);
  const auto add = std::get<AddRequest>(decoded(2));
  EXPECT_EQ(add.request.cached_bytes, 123456789012ULL);
  EXPECT_EQ(add.request.max_output_tokens, 256u);
  const auto hit = std::get<ReportHit>(decoded(3));
  ASSERT_EQ(hit.manifest.size(), 2u);
  EXPECT_EQ(hit.manifest[1].key, (Key{1, UINT64_MAX}));
  EXPECT_EQ(hit.manifest[0].bytes, 4096u);
  const auto order = std::get<UpdateOrder>(decoded(4));
  EXPECT_EQ(order.waiting, (std::vector<uint64_t>{7, 3, UINT64_MAX}));
  EXPECT_EQ(order.boundary_in_ns, 1500000);
  EXPECT_EQ(std::get<IterationStarted>(decoded(5)).decoders, (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(std::get<Finished>(decoded(9)).output_tokens, UINT32_MAX);
  EXPECT_EQ(std::get<ObjectTransferred>(decoded(13)).key, (Key{UINT64_MAX, 9}));
  EXPECT_EQ(std::get<Lookup>(decoded(16)).keys[1], (Key{3, UINT64_MAX}));
  EXPECT_EQ(std::get<ReserveWrite>(decoded(17)).bytes, 1u << 20);
  const auto put = std::get<Put>(decoded(18));
  EXPECT_EQ(put.key, (Key{5, 6}));
  EXPECT_EQ(put.tokens.begin, 256u);
  EXPECT_EQ(put.tokens.end, 512u);
  EXPECT_EQ(put.offset, 4096u);
  EXPECT_EQ(put.bytes, 1000u);
  EXPECT_EQ(put.checksum_low, UINT64_MAX);
  EXPECT_EQ(put.checksum_high, 3u);
  EXPECT_EQ(std::get<AbortWrite>(decoded(19)).offset, 8192u);
}

// Writes need version 3 (the runtime's own region, a declared checksum): an older client's
// reserve_write and put are refused by name, and a v3 put without its checksum too.
TEST(ProtocolTest, WritesNeedVersion3AndAPutItsChecksum) {
  for (const Op& op : {Op{ReserveWrite{4096}}, Op{Put{Key{1, 1}, TokenRange{0, 5}, 0, 4096}}}) {
    Result<Request> old = decode_request(encode_request(Request{2, 1, op}));
    ASSERT_FALSE(old.is_ok());
    EXPECT_THAT(old.status().message(), HasSubstr("needs protocol version 3"));
  }
  std::vector<std::byte> put = encode_request(
      Request{kProtocolVersion, 1, Put{Key{1, 1}, TokenRange{0, 5}, 0, 4096, 1, 2}});
  // The checksum's name in the message, renamed so the decoder cannot find it.
  const std::string name = "checksum";
  auto at = std::search(put.begin(), put.end(), name.begin(), name.end(),
                        [](std::byte b, char c) { return b == std::byte(c); });
  ASSERT_NE(at, put.end());
  *at = std::byte{'x'};
  Result<Request> missing = decode_request(put);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("xhecksum"));
}

TEST(ProtocolTest, PutWithEndBeforeFirstTokenIsRefused) {
  Request r{kProtocolVersion, 1, Put{Key{1, 1}, TokenRange{10, 5}, 0, 4096}};
  Result<Request> back = decode_request(encode_request(r));
  ASSERT_FALSE(back.is_ok());
  EXPECT_THAT(back.status().message(), HasSubstr("end_token"));
}

// Packs a message by hand, for the shapes encode_request never produces.
std::vector<std::byte> pack(const std::function<void(wire::Packer&)>& fill) {
  wire::Sink sink;
  wire::Packer pk(sink);
  fill(pk);
  return std::move(sink.bytes);
}

// An envelope with the given op and args written by `args`.
std::vector<std::byte> envelope(std::string_view op, const std::function<void(wire::Packer&)>& args,
                                uint64_t v = kProtocolVersion) {
  return pack([&](wire::Packer& pk) {
    pk.pack_map(4);
    wire::pack_str(pk, "v");
    pk.pack(v);
    wire::pack_str(pk, "id");
    pk.pack(uint64_t{5});
    wire::pack_str(pk, "op");
    wire::pack_str(pk, op);
    wire::pack_str(pk, "args");
    args(pk);
  });
}

void expect_invalid(const std::vector<std::byte>& bytes, std::string_view names) {
  Result<Request> r = decode_request(bytes);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr(std::string(names)));
}

TEST(ProtocolTest, MessageThatIsNotAMapIsRefused) {
  expect_invalid(pack([](wire::Packer& pk) { pk.pack(uint64_t{3}); }), "request must be a map");
  expect_invalid(pack([](wire::Packer& pk) { pk.pack_array(0); }), "got array");
}

TEST(ProtocolTest, EmptyTruncatedAndTrailingBytesAreRefused) {
  expect_invalid({}, "empty message");
  auto bytes = encode_request(one_of_every_op()[3]);
  bytes.pop_back();
  expect_invalid(bytes, "truncated");
  bytes = encode_request(one_of_every_op()[3]);
  bytes.push_back(std::byte{0xc0});
  expect_invalid(bytes, "1 trailing bytes");
  expect_invalid({std::byte{0xc1}}, "malformed MessagePack");  // 0xc1 is never used
}

TEST(ProtocolTest, MissingFieldIsNamed) {
  expect_invalid(pack([](wire::Packer& pk) {
                   pk.pack_map(1);
                   wire::pack_str(pk, "id");
                   pk.pack(1);
                 }),
                 "request: missing field 'v'");
  expect_invalid(envelope("admitted", [](wire::Packer& pk) { pk.pack_map(0); }),
                 "args of admitted: missing field 'request_id'");
}

TEST(ProtocolTest, WrongTypeIsNamed) {
  expect_invalid(envelope("admitted",
                          [](wire::Packer& pk) {
                            pk.pack_map(1);
                            wire::pack_str(pk, "request_id");
                            wire::pack_str(pk, "7");
                          }),
                 "field 'request_id' must be an unsigned integer, got string");
  expect_invalid(envelope("finished",
                          [](wire::Packer& pk) {
                            pk.pack_map(2);
                            wire::pack_str(pk, "request_id");
                            pk.pack(1);
                            wire::pack_str(pk, "output_tokens");
                            pk.pack(int64_t{-1});
                          }),
                 "got negative integer");
  expect_invalid(envelope("tokens_generated",
                          [](wire::Packer& pk) {
                            pk.pack_map(2);
                            wire::pack_str(pk, "request_id");
                            pk.pack(1);
                            wire::pack_str(pk, "total_generated");
                            pk.pack(uint64_t{1} << 32);
                          }),
                 "above 2^32-1");
  expect_invalid(envelope("heartbeat", [](wire::Packer& pk) { pk.pack_array(0); }),
                 "args of heartbeat must be a map, got array");
  expect_invalid(envelope("report_hit",
                          [](wire::Packer& pk) {
                            pk.pack_map(2);
                            wire::pack_str(pk, "request_id");
                            pk.pack(1);
                            wire::pack_str(pk, "manifest");
                            pk.pack_array(1);
                            pk.pack_array(2);
                            pk.pack(1);
                            pk.pack(2);
                          }),
                 "field 'manifest'[0] must be an array [model, hash, bytes], got an array of 2");
  // A bad element of an id list is named with its index; the good ones before it do not hide it.
  expect_invalid(envelope("update_order",
                          [](wire::Packer& pk) {
                            pk.pack_map(1);
                            wire::pack_str(pk, "waiting");
                            pk.pack_array(3);
                            pk.pack(uint64_t{4});
                            pk.pack(uint64_t{5});
                            wire::pack_str(pk, "6");
                          }),
                 "field 'waiting'[2] must be an unsigned integer, got string");
  expect_invalid(envelope("update_order",
                          [](wire::Packer& pk) {
                            pk.pack_map(1);
                            wire::pack_str(pk, "waiting");
                            pk.pack_array(2);
                            pk.pack(int64_t{-3});
                            pk.pack(uint64_t{5});
                          }),
                 "field 'waiting'[0]");
  expect_invalid(envelope("object_transferred",
                          [](wire::Packer& pk) {
                            pk.pack_map(2);
                            wire::pack_str(pk, "request_id");
                            pk.pack(1);
                            wire::pack_str(pk, "key");
                            pk.pack_nil();
                          }),
                 "field 'key' must be an array [model, hash], got nil");
}

TEST(ProtocolTest, UnknownOpUnknownFieldAndDuplicateFieldAreNamed) {
  expect_invalid(envelope("drop_table", [](wire::Packer& pk) { pk.pack_map(0); }),
                 "unknown op 'drop_table'");
  expect_invalid(envelope("heartbeat",
                          [](wire::Packer& pk) {
                            pk.pack_map(1);
                            wire::pack_str(pk, "x");
                            pk.pack(1);
                          }),
                 "args of heartbeat has unknown field 'x'");
  expect_invalid(envelope("cancel",
                          [](wire::Packer& pk) {
                            pk.pack_map(2);
                            wire::pack_str(pk, "request_id");
                            pk.pack(1);
                            wire::pack_str(pk, "request_id");
                            pk.pack(2);
                          }),
                 "has field 'request_id' twice");
  expect_invalid(pack([](wire::Packer& pk) {
                   pk.pack_map(1);
                   pk.pack(1);
                   pk.pack(1);
                 }),
                 "request has a key of type unsigned integer, not string");
}

TEST(ProtocolTest, UnsupportedVersionIsRefusedButItsIdIsKept) {
  std::optional<uint64_t> id;
  Result<Request> r = decode_request(envelope(
                                         "heartbeat", [](wire::Packer& pk) { pk.pack_map(0); }, 9),
                                     &id);
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), HasSubstr("unsupported protocol version 9"));
  EXPECT_EQ(id, 5u);
}

TEST(ProtocolTest, OversizedMessagesAndListsAreRefused) {
  std::vector<std::byte> big(kMaxMessageBytes + 1, std::byte{0});
  expect_invalid(big, "exceeds the limit of 1048576 bytes");
  ReportHit hit{1,
                std::vector<ManifestEntry>(kMaxManifestEntries + 1, ManifestEntry{Key{1, 2}, 3})};
  expect_invalid(encode_request(Request{1, 1, hit}),
                 "field 'manifest' has 16385 entries, more than the limit of 16384");
  hit.manifest.pop_back();
  EXPECT_TRUE(decode_request(encode_request(Request{1, 1, hit})).is_ok());
  // An array header claiming more entries than the decoder allows, with no entries behind it.
  expect_invalid(pack([](wire::Packer& pk) { pk.pack_array(UINT32_MAX); }),
                 "exceeds a decoding limit");
  expect_invalid(pack([](wire::Packer& pk) {
                   for (int i = 0; i < 10; ++i) pk.pack_array(1);
                   pk.pack(1);
                 }),
                 "exceeds a decoding limit");
}

TEST(ProtocolTest, PickVersionTakesTheHighestCommonVersion) {
  EXPECT_EQ(pick_version(std::vector<uint32_t>{0, 1, 7}), 1u);
  EXPECT_EQ(pick_version(std::vector<uint32_t>{2, 3}), 3u);
  EXPECT_EQ(pick_version(std::vector<uint32_t>{1, 2}), 2u);
  EXPECT_EQ(pick_version(std::vector<uint32_t>{3, 4}), 4u);
  EXPECT_EQ(pick_version(std::vector<uint32_t>{5, 6}), std::nullopt);
}

TEST(ProtocolTest, RepliesErrorsAndNotificationsDecodeOnTheClient) {
  auto decode = [](const std::vector<std::byte>& b) { return decode_server_message(b).value(); };
  const auto plain = std::get<Reply>(decode(encode_reply(3)));
  EXPECT_EQ(plain.id, 3u);
  EXPECT_FALSE(plain.hello || plain.answer);
  HelloResult hr{1, "tempokvd 0.1.0"};
  hr.session = 12;
  hr.runtime_id = 3;
  hr.heartbeat_timeout_ms = 5000;
  hr.tier_path = "/dev/shm/tier";
  hr.tier_bytes = 1 << 30;
  hr.write_path = "/dev/shm/writes";
  hr.write_bytes = 1 << 20;
  hr.key_filter_path = "/dev/shm/keys";
  const auto hello = std::get<Reply>(decode(encode_hello_reply(4, hr)));
  ASSERT_TRUE(hello.hello);
  EXPECT_EQ(hello.hello->server, "tempokvd 0.1.0");
  EXPECT_EQ(hello.hello->max_manifest_entries, kMaxManifestEntries);
  EXPECT_EQ(hello.hello->session, 12u);
  EXPECT_EQ(hello.hello->runtime_id, 3u);
  EXPECT_EQ(hello.hello->heartbeat_timeout_ms, 5000u);
  EXPECT_EQ(hello.hello->tier_path, "/dev/shm/tier");
  EXPECT_EQ(hello.hello->tier_bytes, 1u << 30);
  EXPECT_EQ(hello.hello->write_path, "/dev/shm/writes");
  EXPECT_EQ(hello.hello->write_bytes, 1u << 20);
  EXPECT_EQ(hello.hello->key_filter_path, "/dev/shm/keys");
  EXPECT_EQ(std::get<Reply>(decode(encode_retrieval_reply(5, RetrievalAnswer::kWait))).answer,
            RetrievalAnswer::kWait);
  const std::vector<TierSpan> spans = {{0, 4096, 7}, {1 << 20, 100, 9}};  // generations too
  const auto ready_now =
      std::get<Reply>(decode(encode_retrieval_reply(5, RetrievalAnswer::kReady, spans)));
  EXPECT_EQ(ready_now.answer, RetrievalAnswer::kReady);
  EXPECT_EQ(ready_now.objects, spans);
  const auto reserved = std::get<Reply>(decode(encode_offset_reply(6, 8192, "/dev/shm/w/rt-1", 4096)));
  EXPECT_EQ(reserved.offset, 8192u);
  EXPECT_EQ(reserved.write_path, "/dev/shm/w/rt-1");
  EXPECT_EQ(reserved.write_bytes, 4096u);
  const std::vector<uint64_t> sizes = {0, 4096, 7};
  EXPECT_EQ(std::get<Reply>(decode(encode_lookup_reply(6, sizes))).bytes, sizes);
  const StatList stats = {{"claims", 3}, {"protected_gib_s", 0.25}};
  EXPECT_EQ(std::get<Reply>(decode(encode_stats_reply(6, stats))).stats, stats);
  const auto err = std::get<ErrorReply>(decode(encode_error(6, Status::not_found("claim 6"))));
  EXPECT_EQ(err.id, 6u);
  EXPECT_EQ(err.error, Status::not_found("claim 6"));
  EXPECT_EQ(std::get<ErrorReply>(decode(encode_error(std::nullopt, Status::internal("x")))).id,
            std::nullopt);
  const auto ready =
      std::get<ReadyNotification>(decode(encode_ready(8, RetrievalPath::kOrdinary, spans)));
  EXPECT_EQ(ready.request_id, 8u);
  EXPECT_EQ(ready.outcome.value(), RetrievalPath::kOrdinary);
  EXPECT_EQ(ready.objects, spans);
  const auto failed =
      std::get<ReadyNotification>(decode(encode_ready(9, Status::io_error("read failed"))));
  EXPECT_EQ(failed.outcome.status(), Status::io_error("read failed"));
}

TEST(ProtocolTest, EveryStatusCodeNameRoundTrips) {
  for (int c = 1; c <= static_cast<int>(StatusCode::kInternal); ++c) {
    Status s(static_cast<StatusCode>(c), "m");
    EXPECT_EQ(std::get<ErrorReply>(decode_server_message(encode_error(1, s)).value()).error, s);
  }
}

TEST(ProtocolTest, EnvelopeWithARepeatedFieldStillEchoesItsId) {
  auto bytes = pack([](wire::Packer& pk) {
    pk.pack_map(5);
    wire::pack_str(pk, "v");
    pk.pack(1);
    wire::pack_str(pk, "id");
    pk.pack(uint64_t{41});
    wire::pack_str(pk, "op");
    wire::pack_str(pk, "heartbeat");
    wire::pack_str(pk, "op");
    wire::pack_str(pk, "heartbeat");
    wire::pack_str(pk, "args");
    pk.pack_map(0);
  });
  std::optional<uint64_t> id;
  Result<Request> r = decode_request(bytes, &id);
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), HasSubstr("twice"));
  EXPECT_EQ(id, 41u);
}

}  // namespace
}  // namespace tempokv::service

namespace tempokv::service {
namespace {

TEST(ProtocolStepTest, AStepRoundTripsEveryField) {
  RequestInfo info{.id = 11, .prompt_tokens = 4096, .cached_tokens = 1024,
                   .cached_bytes = 1ULL << 40, .max_output_tokens = 64};
  Step step{.seq = 3,
            .queued = {info},
            .finished = {{1, 7}},
            .prefills = {{11, 2048}},
            .decoders = {2},
            .waiting = {12},
            .boundary_in_ns = 42,
            .admitted = {13},
            .measured = {{2, 123456789}},
            .measures = true};
  Result<Request> back = decode_request(encode_request(Request{2, 1, step}));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  const Step& m = std::get<Step>(back->op);
  EXPECT_EQ(m.seq, 3u);
  ASSERT_EQ(m.queued.size(), 1u);
  EXPECT_EQ(m.queued[0].cached_bytes, 1ULL << 40);
  EXPECT_EQ(m.queued[0].max_output_tokens, 64u);
  EXPECT_EQ(m.finished[0].output_tokens, 7u);
  EXPECT_EQ(m.prefills[0].tokens, 2048u);
  EXPECT_EQ(m.decoders, std::vector<uint64_t>{2});
  EXPECT_EQ(m.waiting, std::vector<uint64_t>{12});
  EXPECT_EQ(m.boundary_in_ns, 42);
  EXPECT_EQ(m.admitted, std::vector<uint64_t>{13});
  ASSERT_EQ(m.measured.size(), 1u);
  EXPECT_EQ(m.measured[0].seq, 2u);
  EXPECT_EQ(m.measured[0].duration_ns, 123456789);
  EXPECT_TRUE(m.measures);
  // Without the field the runtime does not measure its steps.
  step.measures = false;
  step.measured.clear();
  back = decode_request(encode_request(Request{2, 1, step}));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_FALSE(std::get<Step>(back->op).measures);
}

TEST(ProtocolStepTest, AStepsEditsRoundTripAndNeedVersion4AndABase) {
  const Step step{.seq = 5,
                  .base = 4,
                  .decoders_gone = {1, 2},
                  .decoders_new = {3},
                  .waiting_new = {9},
                  .waiting_taken = 7};
  const std::vector<std::byte> bytes = encode_request(Request{4, 1, step});
  Result<Request> back = decode_request(bytes);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(encode_request(*back), bytes);
  const Step& m = std::get<Step>(back->op);
  EXPECT_EQ(m.base, 4u);
  EXPECT_EQ(m.decoders_gone, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(m.decoders_new, std::vector<uint64_t>{3});
  EXPECT_EQ(m.waiting_taken, 7u);
  EXPECT_EQ(m.waiting_new, std::vector<uint64_t>{9});
  EXPECT_TRUE(m.decoders.empty() && m.waiting.empty());
  // A step without a base has no edits after decoding, whatever its lists.
  back = decode_request(encode_request(Request{4, 1, Step{.seq = 5, .waiting = {1}}}));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_FALSE(std::get<Step>(back->op).base);
  // Edits in a version 3 message: a daemon of version 3 would not know them.
  Result<Request> v3 = decode_request(encode_request(Request{3, 1, step}));
  ASSERT_FALSE(v3.is_ok());
  EXPECT_NE(v3.status().message().find("step's base (its lists as edits) needs protocol version 4"),
            std::string::npos)
      << v3.status().to_string();
  // Edits without a base, and a base with a list in full.
  auto lists = [](bool base, const char* extra) {
    return envelope("step", [=](wire::Packer& pk) {
      pk.pack_map(base ? 10 : 7);
      wire::pack_str(pk, "seq");
      pk.pack(uint64_t{2});
      for (const char* name : {"queued", "finished", "prefills"}) {
        wire::pack_str(pk, name);
        pk.pack_array(0);
      }
      if (base) {
        wire::pack_str(pk, "base");
        pk.pack(uint64_t{1});
        for (const char* name : {"decoders_gone", "decoders_new", "waiting_new"}) {
          wire::pack_str(pk, name);
          pk.pack_array(0);
        }
        wire::pack_str(pk, "waiting_taken");
        pk.pack(uint64_t{0});
      } else {
        for (const char* name : {"decoders", "waiting"}) {
          wire::pack_str(pk, name);
          pk.pack_array(0);
        }
      }
      wire::pack_str(pk, extra);
      pk.pack_array(0);
    });
  };
  expect_invalid(lists(false, "decoders_new"), "'decoders_new' needs a base");
  expect_invalid(lists(true, "waiting"), "'waiting' comes with a base");
  Result<Request> whole = decode_request(lists(true, "admitted"));
  EXPECT_TRUE(whole.is_ok()) << whole.status().to_string();
}

TEST(ProtocolStepTest, AnAddRequestCarriesItsHitFromVersion4) {
  const AddRequest add{RequestInfo{7, 4096, 1024, 2 << 20, 16},
                       {ManifestEntry{Key{1, 2}, 1 << 20}, ManifestEntry{Key{1, 3}, 1 << 20}}};
  const std::vector<std::byte> bytes = encode_request(Request{4, 1, add});
  Result<Request> back = decode_request(bytes);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(encode_request(*back), bytes);
  const AddRequest& m = std::get<AddRequest>(back->op);
  ASSERT_EQ(m.manifest.size(), 2u);
  EXPECT_EQ(m.manifest[1].key, (Key{1, 3}));
  EXPECT_EQ(m.request.cached_bytes, 2u << 20);
  Result<Request> v3 = decode_request(encode_request(Request{3, 1, add}));
  ASSERT_FALSE(v3.is_ok());
  EXPECT_NE(v3.status().message().find("add_request's manifest needs protocol version 4"),
            std::string::npos)
      << v3.status().to_string();
  // Without a hit the message is version 3's add_request.
  back = decode_request(encode_request(Request{3, 1, AddRequest{add.request}}));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_TRUE(std::get<AddRequest>(back->op).manifest.empty());
}

TEST(ProtocolStepTest, StepIsRefusedInVersion1AndMalformedRowsAreNamed) {
  Result<Request> v1 = decode_request(encode_request(Request{1, 1, Step{.seq = 1}}));
  ASSERT_FALSE(v1.is_ok());
  EXPECT_NE(v1.status().message().find("op 'step' needs protocol version 2"), std::string::npos)
      << v1.status().to_string();
  // A prefill row of three integers instead of [request_id, count].
  std::vector<std::byte> three = envelope("step", [](wire::Packer& pk) {
    pk.pack_map(6);
    wire::pack_str(pk, "seq");
    pk.pack(uint64_t{1});
    for (const char* name : {"queued", "finished", "decoders", "waiting"}) {
      wire::pack_str(pk, name);
      pk.pack_array(0);
    }
    wire::pack_str(pk, "prefills");
    pk.pack_array(1);
    pk.pack_array(3);
    for (uint64_t v : {1, 2, 3}) pk.pack(v);
  });
  Result<Request> r = decode_request(three);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("prefills'[0]"), std::string::npos) << r.status().to_string();
}

}  // namespace
}  // namespace tempokv::service
