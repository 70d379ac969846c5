#include "common/units.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>
#include <string>

namespace tempokv {
namespace {

// The unit's multiplier, 0 when the unit is unknown.
uint64_t unit_bytes(std::string_view unit) {
  if (unit.empty() || unit == "B") return 1;
  if (unit == "K" || unit == "KiB") return kKiB;
  if (unit == "M" || unit == "MiB") return kMiB;
  if (unit == "G" || unit == "GiB") return kGiB;
  if (unit == "T" || unit == "TiB") return 1024 * kGiB;
  if (unit == "KB") return 1'000;
  if (unit == "MB") return 1'000'000;
  if (unit == "GB") return 1'000'000'000;
  if (unit == "TB") return 1'000'000'000'000;
  return 0;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A number as written: its digits, with the decimal point after the first `point` of them
// (moved by any exponent; may lie beyond either end).
struct Decimal {
  std::string digits;
  int64_t point = 0;
};

// Reads "12", "1.5", ".5", "1e9", "1.5E-3" from s at i; the position after it, or nullopt.
std::optional<size_t> read_decimal(std::string_view s, size_t i, Decimal& d) {
  while (i < s.size() && is_digit(s[i])) d.digits += s[i++];
  d.point = static_cast<int64_t>(d.digits.size());
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) d.digits += s[i++];
  }
  if (d.digits.empty()) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {  // no unit begins with e or E
    const bool negative = i + 1 < s.size() && s[i + 1] == '-';
    i += i + 1 < s.size() && (s[i + 1] == '+' || s[i + 1] == '-') ? 2 : 1;
    if (i == s.size() || !is_digit(s[i])) return std::nullopt;
    int64_t exponent = 0;
    for (; i < s.size() && is_digit(s[i]); ++i) {
      // Beyond 10^4 either every digit is fractional or a non-zero whole part overflows.
      exponent = std::min<int64_t>(exponent * 10 + (s[i] - '0'), 10'000);
    }
    d.point += negative ? -exponent : exponent;
  }
  return i;
}

// d × mult rounded to the nearest integer (halves up), exactly; nullopt beyond 64 bits. The
// whole part is multiplied with overflow checked; of the fraction, twice = floor(2 × fraction ×
// mult) is taken digit by digit from the last (each step floor((digit × 2 × mult + twice) / 10)
// floors the exact sum, and twice stays below 2 × mult), so no digit is lost.
std::optional<uint64_t> scaled(Decimal d, uint64_t mult) {
  if (d.point > static_cast<int64_t>(d.digits.size())) {
    d.digits.append(static_cast<size_t>(d.point) - d.digits.size(), '0');
  }
  if (d.point < 0) {
    d.digits.insert(0, static_cast<size_t>(-d.point), '0');
    d.point = 0;
  }
  const size_t point = static_cast<size_t>(d.point);
  uint64_t whole = 0;
  for (size_t k = 0; k < point; ++k) {
    if (__builtin_mul_overflow(whole, 10, &whole) ||
        __builtin_add_overflow(whole, uint64_t(d.digits[k] - '0'), &whole)) {
      return std::nullopt;
    }
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(whole, mult, &bytes)) return std::nullopt;
  uint64_t twice = 0;
  for (size_t k = d.digits.size(); k > point; --k) {
    twice = (uint64_t(d.digits[k - 1] - '0') * 2 * mult + twice) / 10;
  }
  if (__builtin_add_overflow(bytes, (twice + 1) / 2, &bytes)) return std::nullopt;
  return bytes;
}

}  // namespace

Result<uint64_t> parse_bytes(std::string_view text) {
  const std::string s(text);
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  if (i < s.size() && s[i] == '-') {
    return Status::invalid_argument("size '" + s + "' must be a non-negative number");
  }
  if (i < s.size() && s[i] == '+') ++i;
  Decimal d;
  std::optional<size_t> end = read_decimal(s, i, d);
  if (!end) {
    return Status::invalid_argument("size '" + s + "' is not a number with an optional unit");
  }
  i = *end;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  const std::string unit = s.substr(i);
  const uint64_t mult = unit_bytes(unit);
  if (mult == 0) {
    return Status::invalid_argument("size '" + s + "' has unknown unit '" + unit + "'");
  }
  std::optional<uint64_t> bytes = scaled(std::move(d), mult);
  if (!bytes) {
    return Status::invalid_argument("size '" + s + "' does not fit in 64 bits (at most 16 EiB)");
  }
  return *bytes;
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
