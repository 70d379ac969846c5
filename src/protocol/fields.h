// Reading untrusted MessagePack for the protocol decoders: unpacking one message within the
// protocol's limits, and a checked view of a map's fields whose failures are InvalidArgument
// messages naming the field. Internal to the service; values over a caller-owned object_handle.
#pragma once

#include <initializer_list>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "protocol/wire.h"

namespace tempokv::service::wire {

using msgpack::object;
namespace t = msgpack::type;

inline Status bad(std::string m) { return Status::invalid_argument(std::move(m)); }

inline std::string type_name(const object& o) {
  switch (o.type) {
    case t::NIL:
      return "nil";
    case t::BOOLEAN:
      return "boolean";
    case t::POSITIVE_INTEGER:
      return "unsigned integer";
    case t::NEGATIVE_INTEGER:
      return "negative integer";
    case t::FLOAT32:
    case t::FLOAT64:
      return "float";
    case t::STR:
      return "string";
    case t::BIN:
      return "binary";
    case t::ARRAY:
      return "array";
    case t::MAP:
      return "map";
    case t::EXT:
      return "ext";
  }
  return "unknown type";
}

inline Result<uint64_t> as_u64(const object& o, const std::string& what) {
  if (o.type == t::POSITIVE_INTEGER) return o.via.u64;
  return bad(what + " must be an unsigned integer, got " + type_name(o));
}

// A map's fields, checked against the names it may carry: keys must be strings, unknown names
// are refused (unless allowed) and so are duplicates. Holds pointers into the unpacked object.
class Fields {
 public:
  static Result<Fields> read(const object& o, std::string where,
                             std::initializer_list<std::string_view> allowed,
                             bool allow_unknown = false) {
    if (o.type != t::MAP) return bad(where + " must be a map, got " + type_name(o));
    Fields f;
    f.where_ = std::move(where);
    for (std::string_view name : allowed) f.fields_.emplace_back(name, nullptr);
    for (uint32_t i = 0; i < o.via.map.size; ++i) {
      const msgpack::object_kv& kv = o.via.map.ptr[i];
      if (kv.key.type != t::STR) {
        return bad(f.where_ + " has a key of type " + type_name(kv.key) + ", not string");
      }
      std::string_view name(kv.key.via.str.ptr, kv.key.via.str.size);
      bool known = false;
      for (auto& [n, value] : f.fields_) {
        if (n != name) continue;
        if (value != nullptr) return bad(f.where_ + " has field '" + std::string(name) + "' twice");
        value = &kv.val;
        known = true;
      }
      if (!known && !allow_unknown) {
        return bad(f.where_ + " has unknown field '" + std::string(name) + "'");
      }
    }
    return f;
  }

  const object* get(std::string_view name) const {
    for (const auto& [n, value] : fields_)
      if (n == name) return value;
    return nullptr;
  }
  std::string what(std::string_view name) const {
    return f_prefix() + "field '" + std::string(name) + "'";
  }
  Result<const object*> need(std::string_view name) const {
    const object* o = get(name);
    if (o == nullptr) return bad(f_prefix() + "missing field '" + std::string(name) + "'");
    return o;
  }
  Result<uint64_t> u64(std::string_view name) const {
    TEMPOKV_ASSIGN_OR_RETURN(const object* o, need(name));
    return as_u64(*o, what(name));
  }
  Result<uint32_t> u32(std::string_view name) const {
    TEMPOKV_ASSIGN_OR_RETURN(uint64_t v, u64(name));
    if (v > UINT32_MAX) return bad(what(name) + " is " + std::to_string(v) + ", above 2^32-1");
    return static_cast<uint32_t>(v);
  }
  Result<bool> boolean(std::string_view name) const {
    TEMPOKV_ASSIGN_OR_RETURN(const object* o, need(name));
    if (o->type != t::BOOLEAN) return bad(what(name) + " must be a boolean, got " + type_name(*o));
    return o->via.boolean;
  }
  Result<std::string> str(std::string_view name) const {
    TEMPOKV_ASSIGN_OR_RETURN(const object* o, need(name));
    if (o->type != t::STR) return bad(what(name) + " must be a string, got " + type_name(*o));
    return std::string(o->via.str.ptr, o->via.str.size);
  }
  Result<const object*> array(std::string_view name, size_t max_entries) const {
    TEMPOKV_ASSIGN_OR_RETURN(const object* o, need(name));
    if (o->type != t::ARRAY) return bad(what(name) + " must be an array, got " + type_name(*o));
    if (o->via.array.size > max_entries) {
      return bad(what(name) + " has " + std::to_string(o->via.array.size) +
                 " entries, more than the limit of " + std::to_string(max_entries));
    }
    return o;
  }
  Result<std::vector<uint64_t>> ids(std::string_view name) const {
    TEMPOKV_ASSIGN_OR_RETURN(const object* a, array(name, kMaxIdList));
    std::vector<uint64_t> out;
    out.reserve(a->via.array.size);
    for (uint32_t i = 0; i < a->via.array.size; ++i) {
      const object& e = a->via.array.ptr[i];
      // The element's name is formatted only for an error: a step carries thousands of ids.
      if (e.type != t::POSITIVE_INTEGER) {
        return as_u64(e, what(name) + "[" + std::to_string(i) + "]").status();
      }
      out.push_back(e.via.u64);
    }
    return out;
  }
  const std::string& where() const { return where_; }

 private:
  std::string f_prefix() const { return where_ + ": "; }
  std::string where_;
  std::vector<std::pair<std::string_view, const object*>> fields_;
};

// Unsigned integers `arr[0..n)` of a fixed-size array (a key, a manifest entry).
inline Status fixed_u64s(const object& o, const std::string& what, std::span<uint64_t> out,
                         const char* shape) {
  if (o.type != t::ARRAY || o.via.array.size != out.size()) {
    return bad(
        what + " must be an array " + shape + ", got " +
        (o.type == t::ARRAY ? "an array of " + std::to_string(o.via.array.size) : type_name(o)));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    TEMPOKV_ASSIGN_OR_RETURN(out[i],
                             as_u64(o.via.array.ptr[i], what + "[" + std::to_string(i) + "]"));
  }
  return Status::ok();
}

// The rows of list field `name` (at most max_rows), each a fixed-size array of N unsigned
// integers `shape` names: fn(values, what) for each, `what` naming the row for its errors.
template <size_t N, typename Fn>
Status read_rows(const Fields& f, std::string_view name, size_t max_rows, const char* shape,
                 Fn&& fn) {
  TEMPOKV_ASSIGN_OR_RETURN(const object* a, f.array(name, max_rows));
  for (uint32_t i = 0; i < a->via.array.size; ++i) {
    uint64_t v[N];
    const std::string what = f.what(name) + "[" + std::to_string(i) + "]";
    TEMPOKV_RETURN_IF_ERROR(fixed_u64s(a->via.array.ptr[i], what, v, shape));
    TEMPOKV_RETURN_IF_ERROR(fn(v, what));
  }
  return Status::ok();
}

// A key: [model, hash].
inline Result<Key> read_key(const object& o, const std::string& what) {
  uint64_t v[2];
  TEMPOKV_RETURN_IF_ERROR(fixed_u64s(o, what, v, "[model, hash]"));
  return Key{v[0], v[1]};
}

// The step op's args (protocol_step.cc).
Result<Step> read_step_args(const object& args, const std::string& where);

// Unpacks one whole message with the allocation bounded by the protocol's limits.
inline Status unpack(std::span<const std::byte> bytes, msgpack::object_handle& out) {
  if (bytes.empty()) return bad("empty message");
  if (bytes.size() > kMaxMessageBytes) {
    return bad("message of " + std::to_string(bytes.size()) + " bytes exceeds the limit of " +
               std::to_string(kMaxMessageBytes) + " bytes");
  }
  const msgpack::unpack_limit limit(/*array=*/kMaxIdList, /*map=*/32, /*str=*/kMaxStringBytes,
                                    /*bin=*/0, /*ext=*/0, /*depth=*/6);
  size_t offset = 0;
  try {
    out = msgpack::unpack(reinterpret_cast<const char*>(bytes.data()), bytes.size(), offset,
                          nullptr, nullptr, limit);
  } catch (const msgpack::insufficient_bytes&) {
    return bad("truncated message: the MessagePack value ends past the last byte");
  } catch (const msgpack::size_overflow& e) {
    return bad(std::string("message exceeds a decoding limit (") + e.what() + ")");
  } catch (const msgpack::unpack_error& e) {
    return bad(std::string("malformed MessagePack (") + e.what() + ")");
  } catch (const std::bad_alloc&) {
    return bad("message too large to decode");
  } catch (const std::exception& e) {
    return bad(std::string("undecodable message (") + e.what() + ")");
  }
  if (offset != bytes.size()) {
    return bad(std::to_string(bytes.size() - offset) + " trailing bytes after the message");
  }
  return Status::ok();
}

}  // namespace tempokv::service::wire
