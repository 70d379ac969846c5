#include "daemon/prometheus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tempokv::service {
namespace {

TEST(Prometheus, HistogramTextIsExact) {
  Histogram h({1, 0.25, 0.5, 0.5, std::numeric_limits<double>::infinity()});
  for (double v : {0.125, 0.25, 0.375, 2.0}) h.observe(v);
  h.observe(std::nan(""));  // ignored
  PrometheusWriter w;
  w.histogram("tempokv_read_seconds", "Time of one SSD read.", h, {{"op", "get"}});
  EXPECT_EQ(w.text(),
            "# HELP tempokv_read_seconds Time of one SSD read.\n"
            "# TYPE tempokv_read_seconds histogram\n"
            "tempokv_read_seconds_bucket{op=\"get\",le=\"0.25\"} 2\n"
            "tempokv_read_seconds_bucket{op=\"get\",le=\"0.5\"} 3\n"
            "tempokv_read_seconds_bucket{op=\"get\",le=\"1\"} 3\n"
            "tempokv_read_seconds_bucket{op=\"get\",le=\"+Inf\"} 4\n"
            "tempokv_read_seconds_sum{op=\"get\"} 2.75\n"
            "tempokv_read_seconds_count{op=\"get\"} 4\n");
}

TEST(Prometheus, HistogramWithoutLabelsAndObservations) {
  Histogram h({0.001});
  PrometheusWriter w;
  w.histogram("lat", "h", h);
  EXPECT_EQ(w.text(),
            "# HELP lat h\n"
            "# TYPE lat histogram\n"
            "lat_bucket{le=\"0.001\"} 0\n"
            "lat_bucket{le=\"+Inf\"} 0\n"
            "lat_sum 0\n"
            "lat_count 0\n");
}

TEST(Prometheus, ObservationOnABoundCountsInThatBucket) {
  Histogram h({1, 2});
  h.observe(1);
  h.observe(2);
  h.observe(2.5);
  EXPECT_EQ(h.cumulative_counts(), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(h.count(), 3u);
  EXPECT_EQ(h.sum(), 5.5);
}

TEST(Prometheus, CountersAndGaugesWithEscapedLabels) {
  PrometheusWriter w;
  w.counter("tempokv_puts_total", "Puts accepted.\nWith a \\ in help.", 42);
  w.family("tempokv_tier_bytes", "Fast tier bytes \"by state\".", MetricType::kGauge);
  w.sample("tempokv_tier_bytes", {{"state", "protected"}, {"tier", "a\"b\\c\nd"}}, 4096);
  w.sample("tempokv_tier_bytes", {{"state", "free"}}, 0.5);
  w.gauge("tempokv_up", "1 while serving.", 1, {{"version", "0.1.0"}});
  EXPECT_EQ(w.text(),
            "# HELP tempokv_puts_total Puts accepted.\\nWith a \\\\ in help.\n"
            "# TYPE tempokv_puts_total counter\n"
            "tempokv_puts_total 42\n"
            "# HELP tempokv_tier_bytes Fast tier bytes \"by state\".\n"
            "# TYPE tempokv_tier_bytes gauge\n"
            "tempokv_tier_bytes{state=\"protected\",tier=\"a\\\"b\\\\c\\nd\"} 4096\n"
            "tempokv_tier_bytes{state=\"free\"} 0.5\n"
            "# HELP tempokv_up 1 while serving.\n"
            "# TYPE tempokv_up gauge\n"
            "tempokv_up{version=\"0.1.0\"} 1\n");
}

TEST(Prometheus, ValuesFormatAsPrometheusReadsThem) {
  EXPECT_EQ(format_metric_value(0), "0");
  EXPECT_EQ(format_metric_value(-3), "-3");
  EXPECT_EQ(format_metric_value(2e9), "2000000000");
  EXPECT_EQ(format_metric_value(0.1), "0.1");
  EXPECT_EQ(format_metric_value(1e300), "1e+300");
  EXPECT_EQ(format_metric_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_metric_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(format_metric_value(std::nan("")), "NaN");
}

TEST(Prometheus, TakeLeavesTheWriterEmpty) {
  PrometheusWriter w;
  w.gauge("g", "x", 1);
  std::string text = w.take();
  EXPECT_FALSE(text.empty());
  EXPECT_TRUE(w.text().empty());
}

}  // namespace
}  // namespace tempokv::service
