// decode_server_message: the client side of docs/protocol.md (replies and notifications).
#include "service/fields.h"
#include "service/protocol.h"

namespace tempokv::service {
using namespace wire;  // NOLINT(google-build-using-namespace): the decoder's own helpers
namespace t = msgpack::type;

Result<ServerMessage> decode_server_message(std::span<const std::byte> bytes) {
  msgpack::object_handle handle;
  TEMPOKV_RETURN_IF_ERROR(unpack(bytes, handle));
  const object& root = handle.get();
  // Unknown fields are tolerated: a newer server may say more than this client reads.
  TEMPOKV_ASSIGN_OR_RETURN(
      Fields f, Fields::read(root, "server message",
                             {"id", "ok", "result", "error", "event", "request_id", "path"}, true));
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
                                                    "max_manifest_entries", "answer"},
                                                   true));
  if (rf.get("version") != nullptr) {
    HelloResult h;
    TEMPOKV_ASSIGN_OR_RETURN(h.version, rf.u32("version"));
    TEMPOKV_ASSIGN_OR_RETURN(h.server, rf.str("server"));
    TEMPOKV_ASSIGN_OR_RETURN(h.max_message_bytes, rf.u64("max_message_bytes"));
    TEMPOKV_ASSIGN_OR_RETURN(h.max_manifest_entries, rf.u64("max_manifest_entries"));
    r.hello = std::move(h);
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
