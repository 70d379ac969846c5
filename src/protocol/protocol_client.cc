// decode_server_message: the client side of docs/protocol.md (replies and notifications).
#include "protocol/fields.h"
#include "tempokv/protocol.h"

namespace tempokv::service {
using namespace wire;  // NOLINT(google-build-using-namespace): the decoder's own helpers
namespace t = msgpack::type;

namespace {

// The optional "objects": [[offset, bytes], ...] of a ready answer or notification.
Result<std::vector<TierSpan>> read_spans(const Fields& f) {
  std::vector<TierSpan> out;
  if (f.get("objects") == nullptr) return out;
  TEMPOKV_RETURN_IF_ERROR(read_rows<2>(f, "objects", kMaxManifestEntries, "[offset, bytes]",
                                       [&](const uint64_t* v, const std::string&) {
                                         out.push_back(TierSpan{v[0], v[1]});
                                         return Status::ok();
                                       }));
  if (f.get("generations") == nullptr) return out;
  TEMPOKV_ASSIGN_OR_RETURN(std::vector<uint64_t> generations, f.ids("generations"));
  if (generations.size() != out.size()) {
    return bad(f.what("generations") + " has " +
                                    std::to_string(generations.size()) + " entries for " +
                                    std::to_string(out.size()) + " objects");
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].generation = generations[i];
  return out;
}

Result<double> as_number(const object& o, const std::string& what) {
  switch (o.type) {
    case t::POSITIVE_INTEGER:
      return static_cast<double>(o.via.u64);
    case t::NEGATIVE_INTEGER:
      return static_cast<double>(o.via.i64);
    case t::FLOAT32:
    case t::FLOAT64:
      return o.via.f64;
    default:
      return bad(what + " must be a number, got " + type_name(o));
  }
}

}  // namespace

Result<ServerMessage> decode_server_message(std::span<const std::byte> bytes) {
  msgpack::object_handle handle;
  TEMPOKV_RETURN_IF_ERROR(unpack(bytes, handle));
  const object& root = handle.get();
  // Unknown fields are tolerated: a newer server may say more than this client reads.
  TEMPOKV_ASSIGN_OR_RETURN(
      Fields f, Fields::read(root, "server message",
                             {"id", "ok", "result", "error", "event", "request_id", "path",
                              "objects", "generations"},
                             true));
  // Reads {code, message} into *out; the returned Status is the decoding outcome.
  auto read_error = [](const object& o, const std::string& where, Status* out) -> Status {
    TEMPOKV_ASSIGN_OR_RETURN(Fields e, Fields::read(o, where, {"code", "message"}, true));
    TEMPOKV_ASSIGN_OR_RETURN(std::string code, e.str("code"));
    TEMPOKV_ASSIGN_OR_RETURN(std::string message, e.str("message"));
    std::optional<StatusCode> c = wire::parse_code(code);
    if (!c) return bad(e.what("code") + " is not a known error code: '" + code + "'");
    *out = Status(*c, std::move(message));
    return Status::ok();
  };
  if (f.get("event") != nullptr) {
    TEMPOKV_ASSIGN_OR_RETURN(std::string event, f.str("event"));
    if (event != "ready") return bad("unknown event '" + event + "'");
    ReadyNotification n;
    TEMPOKV_ASSIGN_OR_RETURN(n.request_id, f.u64("request_id"));
    if (f.get("path") != nullptr) {
      TEMPOKV_ASSIGN_OR_RETURN(std::string path, f.str("path"));
      std::optional<RetrievalPath> p = wire::parse_path(path);
      if (!p) return bad(f.what("path") + " is not staged or ordinary: '" + path + "'");
      n.outcome = *p;
      TEMPOKV_ASSIGN_OR_RETURN(n.objects, read_spans(f));
      return ServerMessage{std::move(n)};
    }
    TEMPOKV_ASSIGN_OR_RETURN(const object* e, f.need("error"));
    Status st;
    TEMPOKV_RETURN_IF_ERROR(read_error(*e, "ready error", &st));
    n.outcome = std::move(st);
    return ServerMessage{std::move(n)};
  }
  TEMPOKV_ASSIGN_OR_RETURN(const object* ok, f.need("ok"));
  if (ok->type != t::BOOLEAN)
    return bad(f.what("ok") + " must be a boolean, got " + type_name(*ok));
  TEMPOKV_ASSIGN_OR_RETURN(const object* id_obj, f.need("id"));
  if (!ok->via.boolean) {
    ErrorReply r;
    if (id_obj->type != t::NIL) {
      TEMPOKV_ASSIGN_OR_RETURN(r.id, as_u64(*id_obj, f.what("id")));
    }
    TEMPOKV_ASSIGN_OR_RETURN(const object* e, f.need("error"));
    TEMPOKV_RETURN_IF_ERROR(read_error(*e, "error", &r.error));
    return ServerMessage{std::move(r)};
  }
  Reply r;
  TEMPOKV_ASSIGN_OR_RETURN(r.id, as_u64(*id_obj, f.what("id")));
  TEMPOKV_ASSIGN_OR_RETURN(const object* res, f.need("result"));
  TEMPOKV_ASSIGN_OR_RETURN(Fields rf, Fields::read(*res, "result",
                                                   {"version", "server", "max_message_bytes",
                                                    "max_manifest_entries", "answer", "objects",
                                                    "generations",
                                                    "offset", "bytes", "stats", "session",
                                                    "runtime_id", "heartbeat_timeout_ms",
                                                    "tier_path", "tier_bytes", "write_path",
                                                    "write_bytes", "instance",
                                                    "key_filter_path"},
                                                   true));
  if (rf.get("version") != nullptr) {
    HelloResult h;
    TEMPOKV_ASSIGN_OR_RETURN(h.version, rf.u32("version"));
    TEMPOKV_ASSIGN_OR_RETURN(h.server, rf.str("server"));
    TEMPOKV_ASSIGN_OR_RETURN(h.max_message_bytes, rf.u64("max_message_bytes"));
    TEMPOKV_ASSIGN_OR_RETURN(h.max_manifest_entries, rf.u64("max_manifest_entries"));
    TEMPOKV_ASSIGN_OR_RETURN(h.session, rf.u64("session"));
    TEMPOKV_ASSIGN_OR_RETURN(h.runtime_id, rf.u32("runtime_id"));
    TEMPOKV_ASSIGN_OR_RETURN(h.heartbeat_timeout_ms, rf.u64("heartbeat_timeout_ms"));
    TEMPOKV_ASSIGN_OR_RETURN(h.tier_path, rf.str("tier_path"));
    TEMPOKV_ASSIGN_OR_RETURN(h.tier_bytes, rf.u64("tier_bytes"));
    TEMPOKV_ASSIGN_OR_RETURN(h.write_path, rf.str("write_path"));
    TEMPOKV_ASSIGN_OR_RETURN(h.write_bytes, rf.u64("write_bytes"));
    if (rf.get("instance") != nullptr) {
      TEMPOKV_ASSIGN_OR_RETURN(h.instance, rf.u64("instance"));
    }
    if (rf.get("key_filter_path") != nullptr) {
      TEMPOKV_ASSIGN_OR_RETURN(h.key_filter_path, rf.str("key_filter_path"));
    }
    r.hello = std::move(h);
  }
  TEMPOKV_ASSIGN_OR_RETURN(r.objects, read_spans(rf));
  if (rf.get("offset") != nullptr) {
    TEMPOKV_ASSIGN_OR_RETURN(r.offset, rf.u64("offset"));
    if (!r.hello && rf.get("write_path") != nullptr) {
      TEMPOKV_ASSIGN_OR_RETURN(r.write_path, rf.str("write_path"));
      TEMPOKV_ASSIGN_OR_RETURN(r.write_bytes, rf.u64("write_bytes"));
    }
  }
  if (rf.get("bytes") != nullptr) {
    TEMPOKV_ASSIGN_OR_RETURN(r.bytes, rf.ids("bytes"));
  }
  if (rf.get("stats") != nullptr) {
    TEMPOKV_ASSIGN_OR_RETURN(const object* a, rf.array("stats", kMaxIdList));
    for (uint32_t i = 0; i < a->via.array.size; ++i) {
      const object& e = a->via.array.ptr[i];
      const std::string what = rf.what("stats") + "[" + std::to_string(i) + "]";
      if (e.type != t::ARRAY || e.via.array.size != 2 || e.via.array.ptr[0].type != t::STR) {
        return bad(what + " must be an array [name, value]");
      }
      const object& name = e.via.array.ptr[0];
      TEMPOKV_ASSIGN_OR_RETURN(double value, as_number(e.via.array.ptr[1], what + "[1]"));
      r.stats.emplace_back(std::string(name.via.str.ptr, name.via.str.size), value);
    }
  }
  if (rf.get("answer") != nullptr) {
    TEMPOKV_ASSIGN_OR_RETURN(std::string answer, rf.str("answer"));
    std::optional<RetrievalAnswer> a = wire::parse_answer(answer);
    if (!a)
      return bad(rf.what("answer") + " is not ready, ordinary_ready or wait: '" + answer + "'");
    r.answer = *a;
  }
  return ServerMessage{std::move(r)};
}

}  // namespace tempokv::service
