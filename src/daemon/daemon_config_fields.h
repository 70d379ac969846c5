// The one list of DaemonConfig's fields (name, type, accessor, doc) and the conversions every
// reader and writer of a field shares: parse_daemon_config, apply_override, to_toml and
// daemon_config_reference all walk it. Internal to daemon_config*.cc; constant data, thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "daemon/daemon_config.h"

namespace tempokv::service::config {

enum class FieldType {
  kString,
  kBool,
  kInteger,  // unsigned, into a uint32_t or uint64_t member
  kBytes,    // unsigned byte count; an integer, or a size string such as "1GiB"
  kNumber,   // double; an integer or a float
  kStrings,  // a list of strings: a TOML array, or comma-separated text in --set
};

using FieldRef =
    std::variant<std::string*, bool*, uint32_t*, uint64_t*, double*, std::vector<std::string>*>;

struct Field {
  std::string_view table;  // "" for a top-level key
  std::string_view key;
  FieldType type;
  FieldRef (*ref)(DaemonConfig&);  // the member this field reads and writes
  std::string_view doc;            // one sentence for the docs and to_toml's comments

  std::string name() const;  // "table.key", or "key" at top level
};

std::span<const Field> fields();
// The tables in the order to_toml writes them.
std::span<const std::string_view> tables();
// The field named "table.key" (or a top-level "key"); nullptr when there is none.
const Field* find_field(std::string_view name);
// "a string", "true or false", "an unsigned integer", "a byte size", "a number", "an array of
// strings".
std::string_view expected(FieldType type);

// Field writers shared by the TOML parser and --set. Errors name the field and say why.
Status set_string(const Field& f, DaemonConfig& c, std::string value);
Status set_bool(const Field& f, DaemonConfig& c, bool value);
Status set_unsigned(const Field& f, DaemonConfig& c, int64_t value);
Status set_number(const Field& f, DaemonConfig& c, double value);
Status set_strings(const Field& f, DaemonConfig& c, std::vector<std::string> value);
// Parses text by the field's type (the --set form) and stores it.
Status set_from_text(const Field& f, DaemonConfig& c, std::string_view text);

// The field's value as a TOML literal: "text" with escapes, true, 4096, 2000000000.0, ["a", "b"].
std::string toml_value(const Field& f, const DaemonConfig& c);
// A TOML basic string literal of s, quoted and escaped.
std::string toml_quote(std::string_view s);

}  // namespace tempokv::service::config
