// Prometheus text exposition format 0.0.4: a writer that appends metric families (# HELP,
// # TYPE, samples) to a string, and a fixed-bucket Histogram. tempokvd renders its /metrics page
// with them on the loop thread.
//
// Names must match Prometheus' rules ([a-zA-Z_:][a-zA-Z0-9_:]* for metrics, [a-zA-Z_][a-zA-Z0-9_]*
// for labels); they come from code, so a bad one is a bug and asserts. Label values and help text
// are escaped. Neither class is thread-safe: use one from one thread (or guard it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tempokv::service {

enum class MetricType { kCounter, kGauge, kHistogram, kSummary, kUntyped };

// Label name and value, in the order they are written.
using Labels = std::vector<std::pair<std::string, std::string>>;

class Histogram {
 public:
  // upper_bounds are the finite `le` bounds; they are sorted and deduplicated, and NaN or infinite
  // ones are dropped (the +Inf bucket is always there).
  explicit Histogram(std::vector<double> upper_bounds);

  // Counts v in the first bucket whose bound is >= v (+Inf when none); NaN is ignored.
  void observe(double v);

  const std::vector<double>& upper_bounds() const { return bounds_; }
  // Cumulative counts, one per bound, then the +Inf bucket (== count()).
  std::vector<uint64_t> cumulative_counts() const;
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class PrometheusWriter {
 public:
  // "# HELP name help" and "# TYPE name type": once per family, before its samples.
  void family(std::string_view name, std::string_view help, MetricType type);
  // name{labels} value
  void sample(std::string_view name, const Labels& labels, double value);
  // name_bucket{labels,le="..."} for each bound and +Inf, then name_sum and name_count.
  void histogram_samples(std::string_view name, const Labels& labels, const Histogram& h);

  // One-sample families.
  void counter(std::string_view name, std::string_view help, double value,
               const Labels& labels = {});
  void gauge(std::string_view name, std::string_view help, double value, const Labels& labels = {});
  void histogram(std::string_view name, std::string_view help, const Histogram& h,
                 const Labels& labels = {});

  const std::string& text() const { return out_; }
  // The text so far; the writer starts over empty.
  std::string take() {
    std::string text = std::move(out_);
    out_.clear();
    return text;
  }

 private:
  void write_sample(std::string_view name, std::string_view suffix, const Labels& labels,
                    std::string_view le, double value);
  std::string out_;
};

// A sample value as Prometheus reads it: integers without a fraction ("42"), others in the
// shortest form that reads back ("0.25", "2e+09"), and "+Inf", "-Inf", "NaN".
std::string format_metric_value(double v);
// A label value with \, " and newline escaped.
std::string escape_label_value(std::string_view v);

}  // namespace tempokv::service
