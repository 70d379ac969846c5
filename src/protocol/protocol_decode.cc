// decode_request: the checks of docs/protocol.md for client messages.
#include <algorithm>

#include "protocol/fields.h"
#include "tempokv/protocol.h"

namespace tempokv::service {
using namespace wire;  // NOLINT(google-build-using-namespace): the decoder's own helpers
namespace t = msgpack::type;
namespace {

// A manifest field: [model, hash, bytes] per object, retrieval order.
Result<std::vector<ManifestEntry>> read_manifest(const Fields& f) {
  std::vector<ManifestEntry> manifest;
  TEMPOKV_RETURN_IF_ERROR(read_rows<3>(f, "manifest", kMaxManifestEntries, "[model, hash, bytes]",
                                       [&](const uint64_t* v, const std::string&) {
                                         manifest.push_back(ManifestEntry{Key{v[0], v[1]}, v[2]});
                                         return Status::ok();
                                       }));
  return manifest;
}

Result<Op> decode_args(size_t index, const object& args_obj) {
  const std::string where = "args of " + std::string(wire::kOpNames[index]);
  auto id_only = [&]() -> Result<uint64_t> {
    TEMPOKV_ASSIGN_OR_RETURN(Fields f, Fields::read(args_obj, where, {"request_id"}));
    return f.u64("request_id");
  };
  switch (index) {
    case wire::kOp<Hello>: {  // unknown fields allowed, so later clients' hellos stay readable
      TEMPOKV_ASSIGN_OR_RETURN(
          Fields f, Fields::read(args_obj, where,
                                 {"versions", "client", "runtime", "max_active", "token_budget",
                                  "ranks", "token", "async_loads"},
                                 true));
      TEMPOKV_ASSIGN_OR_RETURN(const object* a, f.array("versions", kMaxHelloVersions));
      Hello h;
      for (uint32_t i = 0; i < a->via.array.size; ++i) {
        TEMPOKV_ASSIGN_OR_RETURN(
            uint64_t v,
            as_u64(a->via.array.ptr[i], f.what("versions") + "[" + std::to_string(i) + "]"));
        h.versions.push_back(static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX)));
      }
      if (h.versions.empty()) return bad(f.what("versions") + " is empty");
      if (f.get("client") != nullptr) {
        TEMPOKV_ASSIGN_OR_RETURN(h.client, f.str("client"));
      }
      if (f.get("runtime") != nullptr) {
        TEMPOKV_ASSIGN_OR_RETURN(h.runtime, f.str("runtime"));
      }
      if (f.get("max_active") != nullptr) {
        TEMPOKV_ASSIGN_OR_RETURN(h.max_active, f.u32("max_active"));
      }
      if (f.get("token_budget") != nullptr) {
        TEMPOKV_ASSIGN_OR_RETURN(h.token_budget, f.u32("token_budget"));
      }
      if (f.get("async_loads") != nullptr) {
        TEMPOKV_ASSIGN_OR_RETURN(h.async_loads, f.boolean("async_loads"));
      }
      if (f.get("ranks") != nullptr) {
        TEMPOKV_ASSIGN_OR_RETURN(h.ranks, f.u32("ranks"));
      }
      if (f.get("token") != nullptr) {
        TEMPOKV_ASSIGN_OR_RETURN(h.token, f.str("token"));
      }
      return Op{std::move(h)};
    }
    case wire::kOp<Heartbeat>: {
      TEMPOKV_ASSIGN_OR_RETURN(Fields f, Fields::read(args_obj, where, {}));
      return Op{Heartbeat{}};
    }
    case wire::kOp<AddRequest>: {
      TEMPOKV_ASSIGN_OR_RETURN(
          Fields f, Fields::read(args_obj, where,
                                 {"request_id", "prompt_tokens", "cached_tokens", "cached_bytes",
                                  "max_output_tokens", "manifest"}));
      AddRequest m;
      TEMPOKV_ASSIGN_OR_RETURN(m.request.id, f.u64("request_id"));
      TEMPOKV_ASSIGN_OR_RETURN(m.request.prompt_tokens, f.u32("prompt_tokens"));
      TEMPOKV_ASSIGN_OR_RETURN(m.request.cached_tokens, f.u32("cached_tokens"));
      TEMPOKV_ASSIGN_OR_RETURN(m.request.cached_bytes, f.u64("cached_bytes"));
      TEMPOKV_ASSIGN_OR_RETURN(m.request.max_output_tokens, f.u32("max_output_tokens"));
      if (f.get("manifest") != nullptr) {
        TEMPOKV_ASSIGN_OR_RETURN(m.manifest, read_manifest(f));
        if (m.manifest.empty()) return bad(f.what("manifest") + " is empty (leave it out)");
      }
      return Op{std::move(m)};
    }
    case wire::kOp<ReportHit>: {
      TEMPOKV_ASSIGN_OR_RETURN(Fields f, Fields::read(args_obj, where, {"request_id", "manifest"}));
      ReportHit m;
      TEMPOKV_ASSIGN_OR_RETURN(m.request_id, f.u64("request_id"));
      TEMPOKV_ASSIGN_OR_RETURN(m.manifest, read_manifest(f));
      return Op{std::move(m)};
    }
    case wire::kOp<UpdateOrder>: {
      TEMPOKV_ASSIGN_OR_RETURN(Fields f,
                               Fields::read(args_obj, where, {"waiting", "boundary_in_ns"}));
      UpdateOrder m;
      TEMPOKV_ASSIGN_OR_RETURN(m.waiting, f.ids("waiting"));
      if (f.get("boundary_in_ns") != nullptr) {
        TEMPOKV_ASSIGN_OR_RETURN(uint64_t ns, f.u64("boundary_in_ns"));
        if (ns > static_cast<uint64_t>(INT64_MAX))
          return bad(f.what("boundary_in_ns") + " overflows");
        m.boundary_in_ns = static_cast<int64_t>(ns);
      }
      return Op{std::move(m)};
    }
    case wire::kOp<IterationStarted>: {
      TEMPOKV_ASSIGN_OR_RETURN(Fields f, Fields::read(args_obj, where, {"prefills", "decoders"}));
      IterationStarted m;
      TEMPOKV_ASSIGN_OR_RETURN(m.prefills, f.ids("prefills"));
      TEMPOKV_ASSIGN_OR_RETURN(m.decoders, f.ids("decoders"));
      return Op{std::move(m)};
    }
    case wire::kOp<Admitted>: {
      TEMPOKV_ASSIGN_OR_RETURN(uint64_t id, id_only());
      return Op{Admitted{id}};
    }
    case wire::kOp<PrefillDone>: {
      TEMPOKV_ASSIGN_OR_RETURN(uint64_t id, id_only());
      return Op{PrefillDone{id}};
    }
    case wire::kOp<TokensGenerated>:
    case wire::kOp<Finished>: {
      const bool tokens = index == wire::kOp<TokensGenerated>;
      const char* count = tokens ? "total_generated" : "output_tokens";
      TEMPOKV_ASSIGN_OR_RETURN(Fields f, Fields::read(args_obj, where, {"request_id", count}));
      TEMPOKV_ASSIGN_OR_RETURN(uint64_t id, f.u64("request_id"));
      TEMPOKV_ASSIGN_OR_RETURN(uint32_t n, f.u32(count));
      if (tokens) return Op{TokensGenerated{id, n}};
      return Op{Finished{id, n}};
    }
    case wire::kOp<RequestRetrieval>: {
      TEMPOKV_ASSIGN_OR_RETURN(uint64_t id, id_only());
      return Op{RequestRetrieval{id}};
    }
    case wire::kOp<BeginTransfer>: {
      TEMPOKV_ASSIGN_OR_RETURN(uint64_t id, id_only());
      return Op{BeginTransfer{id}};
    }
    case wire::kOp<EndTransfer>: {
      TEMPOKV_ASSIGN_OR_RETURN(uint64_t id, id_only());
      return Op{EndTransfer{id}};
    }
    case wire::kOp<ObjectTransferred>: {
      TEMPOKV_ASSIGN_OR_RETURN(Fields f, Fields::read(args_obj, where, {"request_id", "key"}));
      ObjectTransferred m;
      TEMPOKV_ASSIGN_OR_RETURN(m.request_id, f.u64("request_id"));
      TEMPOKV_ASSIGN_OR_RETURN(const object* k, f.need("key"));
      TEMPOKV_ASSIGN_OR_RETURN(m.key, read_key(*k, f.what("key")));
      return Op{m};
    }
    case wire::kOp<Cancel>: {
      TEMPOKV_ASSIGN_OR_RETURN(uint64_t id, id_only());
      return Op{Cancel{id}};
    }
    case wire::kOp<Bye>:
    case wire::kOp<GetStats>: {
      TEMPOKV_ASSIGN_OR_RETURN(Fields f, Fields::read(args_obj, where, {}));
      if (index == wire::kOp<Bye>) return Op{Bye{}};
      return Op{GetStats{}};
    }
    case wire::kOp<Lookup>: {
      TEMPOKV_ASSIGN_OR_RETURN(Fields f, Fields::read(args_obj, where, {"keys"}));
      TEMPOKV_ASSIGN_OR_RETURN(const object* a, f.array("keys", kMaxManifestEntries));
      Lookup m;
      m.keys.reserve(a->via.array.size);
      for (uint32_t i = 0; i < a->via.array.size; ++i) {
        TEMPOKV_ASSIGN_OR_RETURN(
            Key k, read_key(a->via.array.ptr[i], f.what("keys") + "[" + std::to_string(i) + "]"));
        m.keys.push_back(k);
      }
      return Op{std::move(m)};
    }
    case wire::kOp<ReserveWrite>: {
      TEMPOKV_ASSIGN_OR_RETURN(Fields f, Fields::read(args_obj, where, {"bytes"}));
      ReserveWrite m;
      TEMPOKV_ASSIGN_OR_RETURN(m.bytes, f.u64("bytes"));
      return Op{m};
    }
    case wire::kOp<Put>: {
      TEMPOKV_ASSIGN_OR_RETURN(
          Fields f, Fields::read(args_obj, where,
                                 {"key", "first_token", "end_token", "offset", "bytes",
                                  "checksum"}));
      Put m;
      TEMPOKV_ASSIGN_OR_RETURN(const object* k, f.need("key"));
      TEMPOKV_ASSIGN_OR_RETURN(m.key, read_key(*k, f.what("key")));
      TEMPOKV_ASSIGN_OR_RETURN(m.tokens.begin, f.u32("first_token"));
      TEMPOKV_ASSIGN_OR_RETURN(m.tokens.end, f.u32("end_token"));
      if (m.tokens.end < m.tokens.begin) {
        return bad(f.what("end_token") + " is below first_token");
      }
      TEMPOKV_ASSIGN_OR_RETURN(m.offset, f.u64("offset"));
      TEMPOKV_ASSIGN_OR_RETURN(m.bytes, f.u64("bytes"));
      TEMPOKV_ASSIGN_OR_RETURN(const object* c, f.need("checksum"));
      if (c->type != msgpack::type::ARRAY || c->via.array.size != 2) {
        return bad(f.what("checksum") + " must be [low64, high64] (the payload's XXH3-128)");
      }
      TEMPOKV_ASSIGN_OR_RETURN(m.checksum_low, as_u64(c->via.array.ptr[0], f.what("checksum") + "[0]"));
      TEMPOKV_ASSIGN_OR_RETURN(m.checksum_high, as_u64(c->via.array.ptr[1], f.what("checksum") + "[1]"));
      return Op{m};
    }
    case wire::kOp<AbortWrite>: {
      TEMPOKV_ASSIGN_OR_RETURN(Fields f, Fields::read(args_obj, where, {"offset"}));
      AbortWrite m;
      TEMPOKV_ASSIGN_OR_RETURN(m.offset, f.u64("offset"));
      return Op{m};
    }
    case wire::kOp<Step>: {
      TEMPOKV_ASSIGN_OR_RETURN(Step m, read_step_args(args_obj, where));
      return Op{std::move(m)};
    }
    default:
      return Status::internal("op index out of range");
  }
}

// The first "id" key's value when it is an unsigned integer: what an error reply can echo.
std::optional<uint64_t> first_id(const object& o) {
  if (o.type != t::MAP) return std::nullopt;
  for (uint32_t i = 0; i < o.via.map.size; ++i) {
    const msgpack::object_kv& kv = o.via.map.ptr[i];
    if (kv.key.type == t::STR && std::string_view(kv.key.via.str.ptr, kv.key.via.str.size) == "id")
      return kv.val.type == t::POSITIVE_INTEGER ? std::optional<uint64_t>(kv.val.via.u64)
                                                : std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

Result<Request> decode_request(std::span<const std::byte> bytes, std::optional<uint64_t>* id) {
  if (id != nullptr) id->reset();
  msgpack::object_handle handle;
  TEMPOKV_RETURN_IF_ERROR(unpack(bytes, handle));
  Result<Fields> envelope = Fields::read(handle.get(), "request", {"v", "id", "op", "args"});
  if (!envelope.is_ok()) {
    // The reply still carries the id when the first "id" field is readable.
    if (id != nullptr) *id = first_id(handle.get());
    return envelope.status();
  }
  const Fields& f = *envelope;
  Request r;
  TEMPOKV_ASSIGN_OR_RETURN(r.id, f.u64("id"));
  if (id != nullptr) *id = r.id;
  TEMPOKV_ASSIGN_OR_RETURN(uint64_t v, f.u64("v"));
  if (v < kMinProtocolVersion || v > kProtocolVersion) {
    return bad("unsupported protocol version " + std::to_string(v) + " (this side speaks " +
               std::to_string(kMinProtocolVersion) + ".." + std::to_string(kProtocolVersion) + ")");
  }
  r.version = static_cast<uint32_t>(v);
  TEMPOKV_ASSIGN_OR_RETURN(std::string op, f.str("op"));
  size_t index = 0;
  while (index < wire::kOpNames.size() && wire::kOpNames[index] != op) ++index;
  if (index == wire::kOpNames.size()) return bad("unknown op '" + op + "'");
  if (index == wire::kOp<Step> && r.version < kStepVersion) {
    return bad("op 'step' needs protocol version " + std::to_string(kStepVersion) +
               " (the message is in version " + std::to_string(r.version) + ")");
  }
  if ((index == wire::kOp<ReserveWrite> || index == wire::kOp<Put>) &&
      r.version < kOwnWritesVersion) {
    return bad("op '" + op + "' needs protocol version " + std::to_string(kOwnWritesVersion) +
               " (the message is in version " + std::to_string(r.version) +
               "): writes go to the runtime's own region with a declared checksum");
  }
  TEMPOKV_ASSIGN_OR_RETURN(const object* args, f.need("args"));
  TEMPOKV_ASSIGN_OR_RETURN(r.op, decode_args(index, *args));
  if (const auto* add = std::get_if<AddRequest>(&r.op);
      add != nullptr && !add->manifest.empty() && r.version < kStepEditsVersion) {
    return bad("add_request's manifest needs protocol version " +
               std::to_string(kStepEditsVersion) + " (the message is in version " +
               std::to_string(r.version) + ")");
  }
  if (const Step* step = std::get_if<Step>(&r.op);
      step != nullptr && step->base && r.version < kStepEditsVersion) {
    return bad("step's base (its lists as edits) needs protocol version " +
               std::to_string(kStepEditsVersion) + " (the message is in version " +
               std::to_string(r.version) + ")");
  }
  return r;
}

}  // namespace tempokv::service
