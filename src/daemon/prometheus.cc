#include "daemon/prometheus.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>

namespace tempokv::service {
namespace {

// Used only by asserts: unused (and fine) in NDEBUG builds.
[[maybe_unused]] bool valid_name(std::string_view name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (allow_colon && c == ':') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

std::string_view type_name(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kSummary:
      return "summary";
    case MetricType::kUntyped:
      break;
  }
  return "untyped";
}

// Backslash and newline escaped; a double quote too where `quotes` (label values: HELP text
// keeps its quotes as they are).
std::string escaped(std::string_view text, bool quotes) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (quotes && c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string format_metric_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // Exactly representable integers print whole (2^53 bounds where every integer is exact).
  if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0) {
    return std::to_string(static_cast<int64_t>(v));
  }
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

std::string escape_label_value(std::string_view v) { return escaped(v, true); }

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)) {
  std::erase_if(bounds_, [](double b) { return !std::isfinite(b); });
  std::sort(bounds_.begin(), bounds_.end());
  bounds_.erase(std::unique(bounds_.begin(), bounds_.end()), bounds_.end());
  counts_.assign(bounds_.size() + 1, 0);
}

void Histogram::observe(double v) {
  if (std::isnan(v)) return;
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  ++counts_[bucket];
  sum_ += v;
  ++count_;
}

std::vector<uint64_t> Histogram::cumulative_counts() const {
  std::vector<uint64_t> out(counts_.size());
  uint64_t running = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    running += counts_[i];
    out[i] = running;
  }
  return out;
}

void PrometheusWriter::family(std::string_view name, std::string_view help, MetricType type) {
  assert(valid_name(name, true) && "bad Prometheus metric name");
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += escaped(help, false);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type_name(type);
  out_ += '\n';
}

void PrometheusWriter::write_sample(std::string_view name, std::string_view suffix,
                                    const Labels& labels, std::string_view le, double value) {
  assert(valid_name(name, true) && "bad Prometheus metric name");
  out_ += name;
  out_ += suffix;
  if (!labels.empty() || !le.empty()) {
    out_ += '{';
    bool first = true;
    for (const auto& [label, label_value] : labels) {
      assert(valid_name(label, false) && label != "le" && "bad Prometheus label name");
      if (!first) out_ += ',';
      first = false;
      out_ += label;
      out_ += "=\"";
      out_ += escape_label_value(label_value);
      out_ += '"';
    }
    if (!le.empty()) {
      if (!first) out_ += ',';
      out_ += "le=\"";
      out_ += le;
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += format_metric_value(value);
  out_ += '\n';
}

void PrometheusWriter::sample(std::string_view name, const Labels& labels, double value) {
  write_sample(name, "", labels, "", value);
}

void PrometheusWriter::histogram_samples(std::string_view name, const Labels& labels,
                                         const Histogram& h) {
  const std::vector<uint64_t> cumulative = h.cumulative_counts();
  for (size_t i = 0; i < h.upper_bounds().size(); ++i) {
    write_sample(name, "_bucket", labels, format_metric_value(h.upper_bounds()[i]),
                 static_cast<double>(cumulative[i]));
  }
  write_sample(name, "_bucket", labels, "+Inf", static_cast<double>(h.count()));
  write_sample(name, "_sum", labels, "", h.sum());
  write_sample(name, "_count", labels, "", static_cast<double>(h.count()));
}

void PrometheusWriter::counter(std::string_view name, std::string_view help, double value,
                               const Labels& labels) {
  family(name, help, MetricType::kCounter);
  sample(name, labels, value);
}

void PrometheusWriter::gauge(std::string_view name, std::string_view help, double value,
                             const Labels& labels) {
  family(name, help, MetricType::kGauge);
  sample(name, labels, value);
}

void PrometheusWriter::histogram(std::string_view name, std::string_view help, const Histogram& h,
                                 const Labels& labels) {
  family(name, help, MetricType::kHistogram);
  histogram_samples(name, labels, h);
}

}  // namespace tempokv::service
