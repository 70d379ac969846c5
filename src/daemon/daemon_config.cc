#include "daemon/daemon_config.h"

#include <toml++/toml.h>

#include <cerrno>
#include <cstdio>
#include <limits>
#include <memory>

#include "common/units.h"
#include "daemon/daemon_config_fields.h"

namespace tempokv::service {
namespace {

using config::Field;
using config::FieldType;

std::string where(std::string_view origin, const toml::source_region& src) {
  return std::string(origin) + ":" + std::to_string(src.begin.line) + ":" +
         std::to_string(src.begin.column) + ": ";
}

std::string_view toml_type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table:
      return "table";
    case toml::node_type::array:
      return "array";
    case toml::node_type::string:
      return "string";
    case toml::node_type::integer:
      return "integer";
    case toml::node_type::floating_point:
      return "float";
    case toml::node_type::boolean:
      return "boolean";
    case toml::node_type::date:
      return "date";
    case toml::node_type::time:
      return "time";
    case toml::node_type::date_time:
      return "date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

Status set_from_node(const Field& f, DaemonConfig& c, const toml::node& n) {
  switch (f.type) {
    case FieldType::kString:
      if (const auto* s = n.as_string()) return config::set_string(f, c, s->get());
      break;
    case FieldType::kBool:
      if (const auto* b = n.as_boolean()) return config::set_bool(f, c, b->get());
      break;
    case FieldType::kInteger:
      if (const auto* i = n.as_integer()) return config::set_unsigned(f, c, i->get());
      break;
    case FieldType::kBytes:
      if (const auto* i = n.as_integer()) return config::set_unsigned(f, c, i->get());
      if (const auto* s = n.as_string()) {
        Result<uint64_t> bytes = parse_bytes(s->get());
        if (!bytes.is_ok() || *bytes > uint64_t{std::numeric_limits<int64_t>::max()}) {
          return Status::invalid_argument(f.name() + " must be " +
                                          std::string(config::expected(f.type)) + " (got '" +
                                          s->get() + "')");
        }
        return config::set_unsigned(f, c, static_cast<int64_t>(*bytes));
      }
      break;
    case FieldType::kNumber:
      if (const auto* d = n.as_floating_point()) return config::set_number(f, c, d->get());
      if (const auto* i = n.as_integer()) {
        return config::set_number(f, c, static_cast<double>(i->get()));
      }
      break;
    case FieldType::kStrings:
      if (const auto* array = n.as_array()) {
        std::vector<std::string> items;
        for (size_t i = 0; i < array->size(); ++i) {
          const auto* s = (*array)[i].as_string();
          if (s == nullptr) {
            return Status::invalid_argument(f.name() + "[" + std::to_string(i) +
                                            "] must be a string (got " +
                                            std::string(toml_type_name((*array)[i])) + ")");
          }
          items.push_back(s->get());
        }
        return config::set_strings(f, c, std::move(items));
      }
      break;
  }
  return Status::invalid_argument(f.name() + " must be " + std::string(config::expected(f.type)) +
                                  " (got " + std::string(toml_type_name(n)) + ")");
}

// Sets the field from a TOML value, its error prefixed with the value's position.
Status set_at(const Field& f, DaemonConfig& c, const toml::node& n, std::string_view origin) {
  Status st = set_from_node(f, c, n);
  if (st.is_ok()) return st;
  return Status::invalid_argument(where(origin, n.source()) + st.message());
}

Status unknown(std::string_view origin, const toml::key& key, const toml::node& n,
               std::string_view name) {
  return Status::invalid_argument(where(origin, key.source()) + "unknown " +
                                  (n.is_table() ? "table" : "key") + " '" + std::string(name) +
                                  "'");
}

bool is_table_name(std::string_view name) {
  for (std::string_view t : config::tables()) {
    if (t == name) return true;
  }
  return false;
}

std::string type_column(FieldType type) {
  switch (type) {
    case FieldType::kString:
      return "string";
    case FieldType::kBool:
      return "bool";
    case FieldType::kInteger:
      return "integer";
    case FieldType::kBytes:
      return "bytes";
    case FieldType::kNumber:
      return "number";
    case FieldType::kStrings:
      return "strings";
  }
  return "";
}

}  // namespace

Result<DaemonConfig> parse_daemon_config(std::string_view toml_text, std::string_view origin) {
  toml::table root;
  // toml++ is built with exceptions; they stop here and leave as a Status.
  try {
    root = toml::parse(toml_text, origin);
  } catch (const toml::parse_error& e) {
    return Status::invalid_argument(where(origin, e.source()) + std::string(e.description()));
  }
  DaemonConfig c;
  for (auto&& [key, node] : root) {
    const std::string_view name = key.str();
    if (!is_table_name(name)) {
      const Field* f = config::find_field(name);
      if (f == nullptr || !f->table.empty()) return unknown(origin, key, node, name);
      TEMPOKV_RETURN_IF_ERROR(set_at(*f, c, node, origin));
      continue;
    }
    const toml::table* table = node.as_table();
    if (table == nullptr) {
      return Status::invalid_argument(where(origin, node.source()) + "'" + std::string(name) +
                                      "' must be a table (got " +
                                      std::string(toml_type_name(node)) + ")");
    }
    for (auto&& [sub_key, sub_node] : *table) {
      const std::string full = std::string(name) + "." + std::string(sub_key.str());
      const Field* f = config::find_field(full);
      if (f == nullptr) return unknown(origin, sub_key, sub_node, full);
      TEMPOKV_RETURN_IF_ERROR(set_at(*f, c, sub_node, origin));
    }
  }
  return c;
}

Result<DaemonConfig> load_daemon_config(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) return Status::from_errno(errno, "opening config " + path);
  std::string text;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, file.get())) > 0) text.append(buf, n);
  if (std::ferror(file.get())) return Status::io_error("reading config " + path);
  return parse_daemon_config(text, path);
}

Status apply_override(DaemonConfig& config, std::string_view assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) {
    return Status::invalid_argument("--set '" + std::string(assignment) +
                                    "': expected table.key=value");
  }
  const std::string_view name = assignment.substr(0, eq);
  const Field* f = config::find_field(name);
  if (f == nullptr) {
    return Status::invalid_argument("--set: unknown key '" + std::string(name) + "'");
  }
  Status st = config::set_from_text(*f, config, assignment.substr(eq + 1));
  if (st.is_ok()) return st;
  return Status::invalid_argument("--set: " + st.message());
}

std::string DaemonConfig::to_toml() const {
  std::string out =
      "# tempokvd configuration; every field is described in docs/tempokvd-config.md\n";
  auto emit_table = [&](std::string_view table) {
    if (!table.empty()) out += "\n[" + std::string(table) + "]\n";
    bool first = true;
    for (const Field& f : config::fields()) {
      if (f.table != table) continue;
      if (!first || table.empty()) out += "\n";
      first = false;
      out += "# " + std::string(f.doc) + "\n";
      out += std::string(f.key) + " = " + config::toml_value(f, *this) + "\n";
    }
  };
  emit_table("");  // top-level keys first: after a [table] header a key belongs to that table
  for (std::string_view table : config::tables()) emit_table(table);
  return out;
}

std::string daemon_config_reference() {
  DaemonConfig defaults;
  std::string out =
      "| Field | Type | Default | Meaning |\n"
      "|-------|------|---------|---------|\n";
  for (const Field& f : config::fields()) {
    // Appended piecewise: `"`" + std::string&&` trips GCC 12's -Wrestrict false positive at -O3.
    std::string def = "`";
    def += config::toml_value(f, defaults);
    def += "`";
    if (f.type == FieldType::kBytes) {
      def += " (" + format_bytes(*std::get<uint64_t*>(f.ref(defaults))) + ")";
    }
    out += "| `" + f.name() + "` | " + type_column(f.type) + " | " + def + " | " +
           std::string(f.doc) + " |\n";
  }
  return out;
}

}  // namespace tempokv::service
