#include "daemon/transport_metrics.h"

namespace tempokv::service {

void add_transport_metrics(const Server& server, std::vector<Metric>& m) {
  const ServerStats s = server.stats();
  m.push_back({"messages_total", "Messages received", MetricType::kCounter, {},
               double(s.messages)});
  m.push_back({"bad_messages_total", "Messages refused (undecodable or out of order)",
               MetricType::kCounter, {}, double(s.bad_messages)});
  m.push_back({"sessions_timed_out_total", "Sessions ended for silence", MetricType::kCounter,
               {}, double(s.sessions_timed_out)});
  m.push_back({"sessions_disconnected_total", "Sessions ended by a disconnect",
               MetricType::kCounter, {}, double(s.sessions_disconnected)});
  m.push_back({"sessions_refused_total", "Sessions refused over max_sessions",
               MetricType::kCounter, {}, double(s.sessions_refused)});
  m.push_back({"hellos_refused_total",
               "Hellos refused (no common version, a wrong token, a full runtime); none holds "
               "a session", MetricType::kCounter, {}, double(s.hellos_refused)});
  m.push_back({"messages_dropped_total",
               "Messages refused unread because their session's queue was full",
               MetricType::kCounter, {}, double(s.dropped_messages)});
  m.push_back({"messages_discarded_total",
               "Messages of closed or timed-out sessions discarded without being decoded",
               MetricType::kCounter, {}, double(s.discarded_messages)});
  m.push_back({"queued_messages", "Messages read and waiting to be served", MetricType::kGauge,
               {}, double(s.queued_messages)});
  m.push_back({"queued_bytes", "Bytes of the messages waiting to be served",
               MetricType::kGauge, {}, double(s.queued_bytes)});
  m.push_back({"connections", "Connections the listener holds now", MetricType::kGauge, {},
               double(s.connections)});
  m.push_back({"connections_refused_total",
               "Connections closed at accept: over the connection limit or out of descriptors",
               MetricType::kCounter, {}, double(s.connections_refused)});
  m.push_back({"connections_idle_closed_total",
               "Connections shut down after server.hello_timeout_ms without a session",
               MetricType::kCounter, {}, double(s.connections_idle_closed)});
  // A summary: quantiles over the recent replies, sum and count over all of them.
  const char* help = "Request receipt to reply (quantiles over recent replies)";
  for (double q : {0.5, 0.99, 0.999}) {
    m.push_back({"reply_latency_seconds", help, MetricType::kSummary,
                 {{"quantile", format_metric_value(q)}}, server.latency_quantile(q)});
  }
  m.push_back({"reply_latency_seconds_sum", help, MetricType::kSummary, {},
               server.latency_sum_seconds()});
  m.push_back({"reply_latency_seconds_count", help, MetricType::kSummary, {},
               double(server.latency_count())});
}

}  // namespace tempokv::service
