// The tempokvd wire protocol (docs/protocol.md): plain structs for every message and the
// MessagePack codec between them and bytes.
//
// A client sends Requests (an envelope {v, id, op, args} with one op per RuntimeAdapter call,
// plus hello and heartbeat); the daemon answers each with a Reply or an ErrorReply carrying the
// same id, and pushes ReadyNotifications for claims that were told to wait. decode_request is
// the daemon's only parser of untrusted bytes: it never throws or crashes on any input and
// answers InvalidArgument naming what was wrong. The codec is stateless: ordering rules (hello
// first, increasing ids) belong to the daemon's session. Pure functions; thread-safe.
//
// Public (ServiceClient's step, stats, objects and hello name these types); the codec is
// src/protocol/ (library tempokv_protocol, TempoKV::protocol when installed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "tempokv/runtime_api.h"

namespace tempokv::service {

inline constexpr uint32_t kProtocolVersion = 4;              // the newest version spoken
inline constexpr uint32_t kMinProtocolVersion = 1;           // the oldest version spoken
inline constexpr size_t kMaxMessageBytes = size_t{1} << 20;  // a larger message is refused
inline constexpr size_t kMaxManifestEntries = 16384;         // objects in one report_hit
inline constexpr size_t kMaxIdList = 65536;      // ids in update_order / iteration_started
inline constexpr size_t kMaxHelloVersions = 16;  // versions offered in one hello
inline constexpr size_t kMaxStringBytes = 4096;  // any string field
inline constexpr uint32_t kStepVersion = 2;      // the first version with the step op
// The first version with per-runtime write regions and declared put checksums: reserve_write and
// put in an older version are refused (docs/protocol.md, "Shared memory").
inline constexpr uint32_t kOwnWritesVersion = 3;
// The first version whose step may give its decoders and waiting order as edits of the
// session's previous step (Step::base; docs/protocol.md, "step").
inline constexpr uint32_t kStepEditsVersion = 4;

struct Hello {
  std::vector<uint32_t> versions;  // protocol versions the client speaks
  std::string client;              // free-form client name, for logs ("" when absent)
  // Sessions naming the same runtime share its adapter and its claims (tensor-parallel ranks of
  // one engine); "" gives the session a runtime of its own.
  std::string runtime;
  uint32_t max_active = 0;  // the runtime's slot limit when this hello creates it; 0: the default
  // The sessions (tensor-parallel ranks) that copy each claim of the runtime, when this hello
  // creates it: a claim ends once that many have ended their transfer. 0: as many as asked.
  uint32_t ranks = 0;
  // The runtime's token when the daemon's server.tokens_file lists it ("" otherwise).
  std::string token;
  // Tokens the runtime computes per step (vLLM's max_num_batched_tokens) when this hello creates
  // it: the adapter then projects prefills chunk by chunk beside the decoders (chunked prefill,
  // AdapterOptions::token_budget). 0: each prefill in one step.
  uint32_t token_budget = 0;
  // The runtime loads KV asynchronously and a request whose KV loads holds no slot (vLLM's KV
  // connectors), when this hello creates it: AdapterOptions::async_loads. false: loads hold a slot.
  bool async_loads = false;
};
struct Heartbeat {};
struct AddRequest {
  RequestInfo request;
  // Version 4: the request's hit (report_hit's manifest, retrieval order), reported with it in
  // one round trip; empty: none.
  std::vector<ManifestEntry> manifest;
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
struct Bye {};  // ends the session as a disconnect would, but at once
struct Lookup {
  std::vector<Key> keys;  // answered with each key's payload bytes in the store (0: absent)
};
struct ReserveWrite {
  uint64_t bytes = 0;  // room in the shared write region for one object's payload
};
struct Put {
  Key key;
  TokenRange tokens;
  uint64_t offset = 0;  // where the payload is in the write region (a reservation of the session)
  uint64_t bytes = 0;   // payload length, at most the reservation's
  // XXH3-128 of the payload as the client wrote it ("checksum": [low64, high64]): the daemon
  // stores the object only when the bytes in the region hash to it.
  uint64_t checksum_low = 0, checksum_high = 0;
};
struct AbortWrite {
  uint64_t offset = 0;  // a reservation given back unused
};
struct GetStats {};
// Protocol v2: one message per scheduler iteration, answered only when it fails (docs/protocol.md).
struct StepPrefill {
  uint64_t request_id = 0;
  uint32_t tokens = 0;  // the prompt tokens this iteration prefills (a chunk, or all of them)
};
struct StepFinished {
  uint64_t request_id = 0;
  uint32_t output_tokens = 0;
};
struct StepMeasured {
  uint64_t seq = 0;          // the step that started the iteration
  int64_t duration_ns = 0;   // how long the runtime measured it to take; >= 0
};
struct Step {
  uint64_t seq = 0;                    // strictly increasing per session
  std::vector<RequestInfo> queued;     // requests that entered the waiting queue (add_request)
  std::vector<StepFinished> finished;  // requests that ended since the last step
  std::vector<StepPrefill> prefills;   // the batch of the iteration starting now: prefills
  std::vector<uint64_t> decoders;      // ... and decoders (one token each)
  std::vector<uint64_t> waiting;       // the waiting order after this schedule
  int64_t boundary_in_ns = 0;          // time until the iteration starting now ends; >= 0
  // Requests the runtime scheduled that compute nothing in this iteration (their KV loads).
  std::vector<uint64_t> admitted;
  // The runtime's own measurement of iterations earlier steps started. `measures`: the field
  // is present (even empty): the runtime measures its iterations; the adapter's costs are
  // calibrated from these, not from when steps arrive.
  std::vector<StepMeasured> measured;
  bool measures = false;
  // Version 4: `decoders` and `waiting` as edits of the lists the session's step `base` carried
  // (its last step; both lists then empty here): its decoders without `decoders_gone`, then
  // `decoders_new`; its order without its first `waiting_taken`, then `waiting_new`. Unset: the
  // lists are given in full. make_step_edits / apply_step_edits (below) build and read them.
  std::optional<uint64_t> base;
  std::vector<uint64_t> decoders_gone, decoders_new, waiting_new;
  uint32_t waiting_taken = 0;
};

// The two lists a step carries in full, as its session last sent or resolved them.
struct StepLists {
  std::vector<uint64_t> decoders, waiting;
};
// Replaces `step`'s full decoders and waiting (when it has no base) by edits of `last`, the lists
// of the session's step `base`, where the edits are shorter; true when it did. The lists are the
// edits' results exactly (order included); a step they cannot express stays in full.
bool make_step_edits(Step& step, const StepLists& last, uint64_t base);
// Applies the edits of `step` (base set) to `lists`, the lists of its base step, leaving the
// lists it stands for. InvalidArgument, naming the field, for a gone decoder not among the
// decoders, more taken than waiting, or lists that would exceed `max_ids`; `lists` is then
// unspecified.
Status apply_step_edits(const Step& step, StepLists& lists, size_t max_ids);

// The order of alternatives is the order of kOpNames in protocol.cc.
using Op = std::variant<Hello, Heartbeat, AddRequest, ReportHit, UpdateOrder, IterationStarted,
                        Admitted, PrefillDone, TokensGenerated, Finished, RequestRetrieval,
                        BeginTransfer, EndTransfer, ObjectTransferred, Cancel, Bye, Lookup,
                        ReserveWrite, Put, AbortWrite, GetStats, Step>;

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
  uint64_t session = 0;               // the daemon's id of this session (logs, metrics)
  uint32_t runtime_id = 0;            // the runtime the session speaks for
  uint64_t heartbeat_timeout_ms = 0;  // a session silent this long is ended
  std::string tier_path;              // the fast tier's shared mapping: map it read-only
  uint64_t tier_bytes = 0;
  // Before version 3: the shared write region (map it read-write). From version 3 each runtime
  // has its own, named by reserve_write's reply; a hello answers "" and 0.
  std::string write_path;
  uint64_t write_bytes = 0;
  // This daemon process's id, drawn at start: a client that finds another one after a reconnect
  // knows the daemon restarted (its claims are gone, its shared files are new). 0: not sent.
  uint64_t instance = 0;
  // The daemon's filter of stored keys (docs/protocol.md, "The key filter"): map it read-only;
  // "" when it offers none (a remote tier is configured: a local miss may hit there).
  std::string key_filter_path;
};
// Where one object's bytes are in the fast tier's mapping.
struct TierSpan {
  uint64_t offset = 0;
  uint64_t bytes = 0;  // the payload's length
  // The store generation of the bytes there ("generations", parallel to "objects"; 0 from a
  // server that does not send it). A client may compare it with what it expects of the object.
  uint64_t generation = 0;
  bool operator==(const TierSpan&) const = default;
};
using StatList = std::vector<std::pair<std::string, double>>;

std::vector<std::byte> encode_reply(uint64_t id);  // {id, ok: true, result: {}}
std::vector<std::byte> encode_hello_reply(uint64_t id, const HelloResult& result);
// `objects` (one per manifest entry, in manifest order) go with a ready or ordinary_ready answer.
std::vector<std::byte> encode_retrieval_reply(uint64_t id, RetrievalAnswer answer,
                                              std::span<const TierSpan> objects = {});
// reserve_write: the reservation's offset in the runtime's write region at `path`, `bytes` long.
std::vector<std::byte> encode_offset_reply(uint64_t id, uint64_t offset, const std::string& path,
                                           uint64_t bytes);
// `claimable`: how many leading keys one claim may hold (all stored, within the protected
// budget); absent when nullopt.
std::vector<std::byte> encode_lookup_reply(uint64_t id, std::span<const uint64_t> bytes,
                                           std::optional<uint64_t> claimable = std::nullopt);
std::vector<std::byte> encode_stats_reply(uint64_t id, const StatList& stats);
// {id (nil when unknown), ok: false, error: {code, message}}; `error` must not be OK.
std::vector<std::byte> encode_error(std::optional<uint64_t> id, const Status& error);
// A waiting claim may begin its transfer on `path` (its objects are at `objects`), or failed
// with `error`.
std::vector<std::byte> encode_ready(uint64_t request_id, const Result<RetrievalPath>& outcome,
                                    std::span<const TierSpan> objects = {});

// The server's version choice: the highest version both sides speak.
std::optional<uint32_t> pick_version(std::span<const uint32_t> offered);

// Client side: what the server sent back, decoded (same never-throw contract).
struct Reply {
  uint64_t id = 0;
  std::optional<HelloResult> hello;       // set for a hello reply
  std::optional<RetrievalAnswer> answer;  // set for a request_retrieval reply
  std::vector<TierSpan> objects;          // with a ready / ordinary_ready answer
  std::optional<uint64_t> offset;         // set for a reserve_write reply
  std::string write_path;                 // with offset: the runtime's write region to map
  uint64_t write_bytes = 0;               // and its length
  std::vector<uint64_t> bytes;            // a lookup reply's sizes
  StatList stats;                         // a stats reply's counters
};
struct ErrorReply {
  std::optional<uint64_t> id;
  Status error;
};
struct ReadyNotification {
  uint64_t request_id = 0;
  Result<RetrievalPath> outcome = RetrievalPath::kStaged;
  std::vector<TierSpan> objects;  // with a path: where the claim's objects are
};
using ServerMessage = std::variant<Reply, ErrorReply, ReadyNotification>;
Result<ServerMessage> decode_server_message(std::span<const std::byte> bytes);

}  // namespace tempokv::service
