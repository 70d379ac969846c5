// The tempokvd wire protocol (docs/protocol.md): plain structs for every message and the
// MessagePack codec between them and bytes.
//
// A client sends Requests (an envelope {v, id, op, args} with one op per RuntimeAdapter call,
// plus hello and heartbeat); the daemon answers each with a Reply or an ErrorReply carrying the
// same id, and pushes ReadyNotifications for claims that were told to wait. decode_request is
// the daemon's only parser of untrusted bytes: it never throws or crashes on any input and
// answers InvalidArgument naming what was wrong. The codec is stateless: ordering rules (hello
// first, increasing ids) belong to the daemon's session. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tempokv/runtime_adapter.h"

namespace tempokv::service {

inline constexpr uint32_t kProtocolVersion = 1;              // the newest version spoken
inline constexpr uint32_t kMinProtocolVersion = 1;           // the oldest version spoken
inline constexpr size_t kMaxMessageBytes = size_t{1} << 20;  // a larger message is refused
inline constexpr size_t kMaxManifestEntries = 16384;         // objects in one report_hit
inline constexpr size_t kMaxIdList = 65536;      // ids in update_order / iteration_started
inline constexpr size_t kMaxHelloVersions = 16;  // versions offered in one hello
inline constexpr size_t kMaxStringBytes = 4096;  // any string field

struct Hello {
  std::vector<uint32_t> versions;  // protocol versions the client speaks
  std::string client;              // free-form client name, for logs ("" when absent)
};
struct Heartbeat {};
struct AddRequest {
  RequestInfo request;
};
struct ReportHit {
  uint64_t request_id = 0;
  std::vector<ManifestEntry> manifest;  // retrieval order
};
struct UpdateOrder {
  std::vector<uint64_t> waiting;  // the runtime's waiting order, first to be scheduled first
  int64_t boundary_in_ns = 0;     // time until the running iteration ends; >= 0
};
struct IterationStarted {
  std::vector<uint64_t> prefills;
  std::vector<uint64_t> decoders;
};
struct Admitted {
  uint64_t request_id = 0;
};
struct PrefillDone {
  uint64_t request_id = 0;
};
struct TokensGenerated {
  uint64_t request_id = 0;
  uint32_t total_generated = 0;
};
struct Finished {
  uint64_t request_id = 0;
  uint32_t output_tokens = 0;
};
struct RequestRetrieval {
  uint64_t request_id = 0;
};
struct BeginTransfer {
  uint64_t request_id = 0;
};
struct EndTransfer {
  uint64_t request_id = 0;
};
struct ObjectTransferred {
  uint64_t request_id = 0;
  Key key;
};
struct Cancel {
  uint64_t request_id = 0;
};

// The order of alternatives is the order of kOpNames in protocol.cc.
using Op = std::variant<Hello, Heartbeat, AddRequest, ReportHit, UpdateOrder, IterationStarted,
                        Admitted, PrefillDone, TokensGenerated, Finished, RequestRetrieval,
                        BeginTransfer, EndTransfer, ObjectTransferred, Cancel>;

struct Request {
  uint32_t version = kProtocolVersion;  // "v": the version the message is written in
  uint64_t id = 0;                      // the client's sequence number, echoed in the reply
  Op op;
};

// The op's wire name ("report_hit", ...).
std::string_view op_name(const Op& op);

// Decodes one client message. Every failure is InvalidArgument naming the problem (not a map,
// missing field, wrong type, unknown op, oversized, ...). When `id` is non-null it is set to the
// envelope's id whenever that could be read, so the error reply can carry it.
Result<Request> decode_request(std::span<const std::byte> bytes,
                               std::optional<uint64_t>* id = nullptr);
std::vector<std::byte> encode_request(const Request& request);

// Successful replies. An op whose adapter call returns a bare Status gets an empty result.
struct HelloResult {
  uint32_t version = kProtocolVersion;  // the version the server picked
  std::string server;                   // server name and build version
  uint64_t max_message_bytes = kMaxMessageBytes;
  uint64_t max_manifest_entries = kMaxManifestEntries;
};
std::vector<std::byte> encode_reply(uint64_t id);  // {id, ok: true, result: {}}
std::vector<std::byte> encode_hello_reply(uint64_t id, const HelloResult& result);
std::vector<std::byte> encode_retrieval_reply(uint64_t id, RetrievalAnswer answer);
// {id (nil when unknown), ok: false, error: {code, message}}; `error` must not be OK.
std::vector<std::byte> encode_error(std::optional<uint64_t> id, const Status& error);
// A waiting claim may begin its transfer on `path`, or failed with `error`.
std::vector<std::byte> encode_ready(uint64_t request_id, const Result<RetrievalPath>& outcome);

// The server's version choice: the highest version both sides speak.
std::optional<uint32_t> pick_version(std::span<const uint32_t> offered);

// Client side: what the server sent back, decoded (same never-throw contract).
struct Reply {
  uint64_t id = 0;
  std::optional<HelloResult> hello;       // set for a hello reply
  std::optional<RetrievalAnswer> answer;  // set for a request_retrieval reply
};
struct ErrorReply {
  std::optional<uint64_t> id;
  Status error;
};
struct ReadyNotification {
  uint64_t request_id = 0;
  Result<RetrievalPath> outcome = RetrievalPath::kStaged;
};
using ServerMessage = std::variant<Reply, ErrorReply, ReadyNotification>;
Result<ServerMessage> decode_server_message(std::span<const std::byte> bytes);

}  // namespace tempokv::service
