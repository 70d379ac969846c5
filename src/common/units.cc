#include "common/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

namespace tempokv {

Result<uint64_t> parse_bytes(std::string_view text) {
  std::string s(text);
  size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(s, &pos);
  } catch (...) {
    return Status::invalid_argument("size '" + s + "' is not a number with an optional unit");
  }
  std::string unit = s.substr(pos);
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front()))) unit.erase(0, 1);
  double mult = 0;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "K" || unit == "KiB") mult = static_cast<double>(kKiB);
  else if (unit == "M" || unit == "MiB") mult = static_cast<double>(kMiB);
  else if (unit == "G" || unit == "GiB") mult = static_cast<double>(kGiB);
  else if (unit == "T" || unit == "TiB") mult = static_cast<double>(kGiB) * 1024;
  else if (unit == "KB") mult = 1e3;
  else if (unit == "MB") mult = 1e6;
  else if (unit == "GB") mult = 1e9;
  else if (unit == "TB") mult = 1e12;
  else return Status::invalid_argument("size '" + s + "' has unknown unit '" + unit + "'");
  if (value < 0 || !std::isfinite(value)) {
    return Status::invalid_argument("size '" + s + "' must be a non-negative number");
  }
  // 2^64 is exactly representable; anything at or above it does not fit (llround would be UB).
  double bytes = std::round(value * mult);
  if (bytes >= 18446744073709551616.0) {
    return Status::invalid_argument("size '" + s + "' does not fit in 64 bits (at most 16 EiB)");
  }
  return static_cast<uint64_t>(bytes);
}

std::string format_bytes(uint64_t bytes) {
  char buf[32];
  if (bytes >= kGiB) std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(kGiB));
  else if (bytes >= kMiB) std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(kMiB));
  else if (bytes >= kKiB) std::snprintf(buf, sizeof buf, "%.1f KiB", double(bytes) / double(kKiB));
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  return buf;
}

}  // namespace tempokv
