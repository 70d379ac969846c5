#include "tempokv/protocol.h"

#include <algorithm>

#include "protocol/wire.h"

namespace tempokv::service {
namespace wire {

std::string_view answer_name(RetrievalAnswer answer) {
  switch (answer) {
    case RetrievalAnswer::kReady:
      return "ready";
    case RetrievalAnswer::kOrdinaryReady:
      return "ordinary_ready";
    case RetrievalAnswer::kWait:
      return "wait";
  }
  return "wait";
}
std::optional<RetrievalAnswer> parse_answer(std::string_view name) {
  for (auto a : {RetrievalAnswer::kReady, RetrievalAnswer::kOrdinaryReady, RetrievalAnswer::kWait})
    if (answer_name(a) == name) return a;
  return std::nullopt;
}
std::string_view path_name(RetrievalPath path) {
  return path == RetrievalPath::kStaged ? "staged" : "ordinary";
}
std::optional<RetrievalPath> parse_path(std::string_view name) {
  for (auto p : {RetrievalPath::kStaged, RetrievalPath::kOrdinary})
    if (path_name(p) == name) return p;
  return std::nullopt;
}
std::optional<StatusCode> parse_code(std::string_view name) {
  for (int c = static_cast<int>(StatusCode::kNotFound);
       c <= static_cast<int>(StatusCode::kInternal); ++c) {
    if (status_code_name(static_cast<StatusCode>(c)) == name) return static_cast<StatusCode>(c);
  }
  return std::nullopt;
}

}  // namespace wire

using wire::pack_str;
using wire::Packer;
using wire::Sink;

namespace {

// One map entry with a scalar value.
template <typename T>
void pack_field(Packer& pk, std::string_view name, const T& value) {
  pack_str(pk, name);
  pk.pack(value);
}

void pack_ids(Packer& pk, const std::vector<uint64_t>& ids) {
  pk.pack_array(static_cast<uint32_t>(ids.size()));
  for (uint64_t id : ids) pk.pack(id);
}

// The args map of each op; the field names are those of docs/protocol.md.
struct ArgsPacker {
  Packer& pk;
  void id_only(uint64_t request_id) {
    pk.pack_map(1);
    pack_field(pk, "request_id", request_id);
  }
  void key(const Key& k) {
    pk.pack_array(2);
    pk.pack(k.model);
    pk.pack(k.hash);
  }
  void operator()(const Hello& m) {
    pk.pack_map(2 + (m.runtime.empty() ? 0 : 1) + (m.max_active == 0 ? 0 : 1) +
                (m.token_budget == 0 ? 0 : 1) + (m.ranks == 0 ? 0 : 1) + (m.token.empty() ? 0 : 1) +
                (m.async_loads ? 1 : 0));
    pack_str(pk, "versions");
    pk.pack_array(static_cast<uint32_t>(m.versions.size()));
    for (uint32_t v : m.versions) pk.pack(v);
    pack_str(pk, "client");
    pack_str(pk, m.client);
    if (!m.runtime.empty()) {
      pack_str(pk, "runtime");
      pack_str(pk, m.runtime);
    }
    if (m.max_active != 0) pack_field(pk, "max_active", m.max_active);
    if (m.token_budget != 0) pack_field(pk, "token_budget", m.token_budget);
    if (m.async_loads) pack_field(pk, "async_loads", true);
    if (m.ranks != 0) pack_field(pk, "ranks", m.ranks);
    if (!m.token.empty()) {
      pack_str(pk, "token");
      pack_str(pk, m.token);
    }
  }
  void operator()(const Heartbeat&) { pk.pack_map(0); }
  void operator()(const AddRequest& m) {
    const RequestInfo& r = m.request;
    pk.pack_map(m.manifest.empty() ? 5 : 6);
    pack_field(pk, "request_id", r.id);
    pack_field(pk, "prompt_tokens", r.prompt_tokens);
    pack_field(pk, "cached_tokens", r.cached_tokens);
    pack_field(pk, "cached_bytes", r.cached_bytes);
    pack_field(pk, "max_output_tokens", r.max_output_tokens);
    if (!m.manifest.empty()) pack_manifest(m.manifest);
  }
  void operator()(const ReportHit& m) {
    pk.pack_map(2);
    pack_field(pk, "request_id", m.request_id);
    pack_manifest(m.manifest);
  }
  void pack_manifest(const std::vector<ManifestEntry>& manifest) {
    pack_str(pk, "manifest");
    pk.pack_array(static_cast<uint32_t>(manifest.size()));
    for (const ManifestEntry& e : manifest) {
      pk.pack_array(3);
      pk.pack(e.key.model);
      pk.pack(e.key.hash);
      pk.pack(e.bytes);
    }
  }
  void operator()(const UpdateOrder& m) {
    pk.pack_map(2);
    pack_str(pk, "waiting");
    pack_ids(pk, m.waiting);
    pack_field(pk, "boundary_in_ns", m.boundary_in_ns);
  }
  void operator()(const IterationStarted& m) {
    pk.pack_map(2);
    pack_str(pk, "prefills");
    pack_ids(pk, m.prefills);
    pack_str(pk, "decoders");
    pack_ids(pk, m.decoders);
  }
  void operator()(const Admitted& m) { id_only(m.request_id); }
  void operator()(const PrefillDone& m) { id_only(m.request_id); }
  void operator()(const TokensGenerated& m) {
    pk.pack_map(2);
    pack_field(pk, "request_id", m.request_id);
    pack_field(pk, "total_generated", m.total_generated);
  }
  void operator()(const Finished& m) {
    pk.pack_map(2);
    pack_field(pk, "request_id", m.request_id);
    pack_field(pk, "output_tokens", m.output_tokens);
  }
  void operator()(const RequestRetrieval& m) { id_only(m.request_id); }
  void operator()(const BeginTransfer& m) { id_only(m.request_id); }
  void operator()(const EndTransfer& m) { id_only(m.request_id); }
  void operator()(const ObjectTransferred& m) {
    pk.pack_map(2);
    pack_field(pk, "request_id", m.request_id);
    pack_str(pk, "key");
    key(m.key);
  }
  void operator()(const Cancel& m) { id_only(m.request_id); }
  void operator()(const Bye&) { pk.pack_map(0); }
  void operator()(const Lookup& m) {
    pk.pack_map(1);
    pack_str(pk, "keys");
    pk.pack_array(static_cast<uint32_t>(m.keys.size()));
    for (const Key& k : m.keys) key(k);
  }
  void operator()(const ReserveWrite& m) {
    pk.pack_map(1);
    pack_field(pk, "bytes", m.bytes);
  }
  void operator()(const Put& m) {
    pk.pack_map(6);
    pack_str(pk, "key");
    key(m.key);
    pack_field(pk, "first_token", m.tokens.begin);
    pack_field(pk, "end_token", m.tokens.end);
    pack_field(pk, "offset", m.offset);
    pack_field(pk, "bytes", m.bytes);
    pack_str(pk, "checksum");
    pk.pack_array(2);
    pk.pack(m.checksum_low);
    pk.pack(m.checksum_high);
  }
  void operator()(const AbortWrite& m) {
    pk.pack_map(1);
    pack_field(pk, "offset", m.offset);
  }
  void operator()(const GetStats&) { pk.pack_map(0); }
  void operator()(const Step& m) { wire::pack_step_args(pk, m); }
};

// "objects": [[offset, bytes], ...] and "generations": [generation, ...]: two map entries (a
// client of an older protocol revision reads the first and ignores the second).
void pack_spans(Packer& pk, std::span<const TierSpan> objects) {
  pack_str(pk, "objects");
  pk.pack_array(static_cast<uint32_t>(objects.size()));
  for (const TierSpan& o : objects) {
    pk.pack_array(2);
    pk.pack(o.offset);
    pk.pack(o.bytes);
  }
  pack_str(pk, "generations");
  pk.pack_array(static_cast<uint32_t>(objects.size()));
  for (const TierSpan& o : objects) pk.pack(o.generation);
}

void pack_status(Packer& pk, const Status& s) {
  pk.pack_map(2);
  pack_str(pk, "code");
  pack_str(pk, status_code_name(s.code()));
  pack_str(pk, "message");
  pack_str(pk, s.message());
}

// {id, ok: true, result: <n fields follow>}; the caller packs the result's fields.
void begin_reply(Packer& pk, uint64_t id, uint32_t result_fields) {
  pk.pack_map(3);
  pack_field(pk, "id", id);
  pack_field(pk, "ok", true);
  pack_str(pk, "result");
  pk.pack_map(result_fields);
}

}  // namespace

std::string_view op_name(const Op& op) { return wire::kOpNames[op.index()]; }

std::vector<std::byte> encode_request(const Request& request) {
  Sink sink;
  Packer pk(sink);
  pk.pack_map(4);
  pack_field(pk, "v", request.version);
  pack_field(pk, "id", request.id);
  pack_str(pk, "op");
  pack_str(pk, op_name(request.op));
  pack_str(pk, "args");
  std::visit(ArgsPacker{pk}, request.op);
  return std::move(sink.bytes);
}

std::vector<std::byte> encode_reply(uint64_t id) {
  Sink sink;
  Packer pk(sink);
  begin_reply(pk, id, 0);
  return std::move(sink.bytes);
}

std::vector<std::byte> encode_hello_reply(uint64_t id, const HelloResult& result) {
  Sink sink;
  Packer pk(sink);
  begin_reply(pk, id, 13);
  pack_field(pk, "version", result.version);
  pack_str(pk, "server");
  pack_str(pk, result.server);
  pack_field(pk, "max_message_bytes", result.max_message_bytes);
  pack_field(pk, "max_manifest_entries", result.max_manifest_entries);
  pack_field(pk, "session", result.session);
  pack_field(pk, "runtime_id", result.runtime_id);
  pack_field(pk, "heartbeat_timeout_ms", result.heartbeat_timeout_ms);
  pack_str(pk, "tier_path");
  pack_str(pk, result.tier_path);
  pack_field(pk, "tier_bytes", result.tier_bytes);
  pack_str(pk, "write_path");
  pack_str(pk, result.write_path);
  pack_field(pk, "write_bytes", result.write_bytes);
  pack_field(pk, "instance", result.instance);
  pack_str(pk, "key_filter_path");
  pack_str(pk, result.key_filter_path);
  return std::move(sink.bytes);
}

std::vector<std::byte> encode_retrieval_reply(uint64_t id, RetrievalAnswer answer,
                                              std::span<const TierSpan> objects) {
  Sink sink;
  Packer pk(sink);
  const bool with_objects = answer != RetrievalAnswer::kWait;
  begin_reply(pk, id, with_objects ? 3 : 1);
  pack_str(pk, "answer");
  pack_str(pk, wire::answer_name(answer));
  if (with_objects) pack_spans(pk, objects);
  return std::move(sink.bytes);
}

std::vector<std::byte> encode_offset_reply(uint64_t id, uint64_t offset, const std::string& path,
                                           uint64_t bytes) {
  Sink sink;
  Packer pk(sink);
  begin_reply(pk, id, 3);
  pack_field(pk, "offset", offset);
  pack_field(pk, "write_path", path);
  pack_field(pk, "write_bytes", bytes);
  return std::move(sink.bytes);
}

std::vector<std::byte> encode_lookup_reply(uint64_t id, std::span<const uint64_t> bytes,
                                           std::optional<uint64_t> claimable) {
  Sink sink;
  Packer pk(sink);
  begin_reply(pk, id, claimable ? 2 : 1);
  pack_str(pk, "bytes");
  pk.pack_array(static_cast<uint32_t>(bytes.size()));
  for (uint64_t b : bytes) pk.pack(b);
  if (claimable) pack_field(pk, "claimable", *claimable);
  return std::move(sink.bytes);
}

std::vector<std::byte> encode_stats_reply(uint64_t id, const StatList& stats) {
  Sink sink;
  Packer pk(sink);
  begin_reply(pk, id, 1);
  pack_str(pk, "stats");
  pk.pack_array(static_cast<uint32_t>(stats.size()));
  for (const auto& [name, value] : stats) {
    pk.pack_array(2);
    pack_str(pk, name);
    pk.pack(value);
  }
  return std::move(sink.bytes);
}

std::vector<std::byte> encode_error(std::optional<uint64_t> id, const Status& error) {
  Sink sink;
  Packer pk(sink);
  pk.pack_map(3);
  pack_str(pk, "id");
  if (id) {
    pk.pack(*id);
  } else {
    pk.pack_nil();
  }
  pack_field(pk, "ok", false);
  pack_str(pk, "error");
  pack_status(pk, error.is_ok() ? Status::internal("error reply without an error") : error);
  return std::move(sink.bytes);
}

std::vector<std::byte> encode_ready(uint64_t request_id, const Result<RetrievalPath>& outcome,
                                    std::span<const TierSpan> objects) {
  Sink sink;
  Packer pk(sink);
  pk.pack_map(outcome.is_ok() ? 5 : 3);
  pack_str(pk, "event");
  pack_str(pk, "ready");
  pack_field(pk, "request_id", request_id);
  if (outcome.is_ok()) {
    pack_str(pk, "path");
    pack_str(pk, wire::path_name(*outcome));
    pack_spans(pk, objects);
  } else {
    pack_str(pk, "error");
    pack_status(pk, outcome.status());
  }
  return std::move(sink.bytes);
}

std::optional<uint32_t> pick_version(std::span<const uint32_t> offered) {
  std::optional<uint32_t> best;
  for (uint32_t v : offered) {
    if (v >= kMinProtocolVersion && v <= kProtocolVersion && (!best || v > *best)) best = v;
  }
  return best;
}

}  // namespace tempokv::service
