// Small pieces of hand-written JSON for the tools' reports.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tempokv::cli {

// Writes `items` as a JSON array of strings (quotes and backslashes escaped, control
// characters dropped).
inline void write_json_strings(std::ostream& s, const std::vector<std::string>& items) {
  s << '[';
  for (size_t i = 0; i < items.size(); ++i) {
    s << (i ? ", " : "") << '"';
    for (char ch : items[i]) {
      if (ch == '"' || ch == '\\') s << '\\';
      if (static_cast<unsigned char>(ch) >= 0x20) s << ch;
    }
    s << '"';
  }
  s << ']';
}

}  // namespace tempokv::cli
