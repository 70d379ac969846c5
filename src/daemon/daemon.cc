#include "daemon/daemon.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "daemon/data_dir.h"
#include "daemon/service_metrics.h"
#include "daemon/shared_file.h"

namespace tempokv::service {

Result<std::map<std::string, std::string>> read_tokens_file(const std::string& path) {
  const std::string field = "server.tokens_file " + path;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return Status::from_errno(errno, field);
  if (!S_ISREG(st.st_mode)) return Status::invalid_argument(field + " is not a regular file");
  if ((st.st_mode & 0077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status::invalid_argument(field + " is accessible to users other than its owner (mode " +
                                    mode + "); chmod 600 it");
  }
  std::ifstream in(path);
  if (!in) return Status::io_error("read " + field);
  std::map<std::string, std::string> tokens;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    std::istringstream words(line);
    std::string runtime, token, more;
    if (!(words >> runtime) || runtime[0] == '#') continue;
    if (!(words >> token) || (words >> more)) {
      return Status::invalid_argument(field + ":" + std::to_string(n) +
                                      ": a line must be RUNTIME TOKEN");
    }
    if (!tokens.emplace(runtime, token).second) {
      return Status::invalid_argument(field + ":" + std::to_string(n) + ": runtime '" + runtime +
                                      "' is listed twice");
    }
  }
  return tokens;
}

Result<CoreOptions> core_options(const DaemonConfig& c, const std::string& profiles_dir,
                                 uint64_t instance) {
  TEMPOKV_RETURN_IF_ERROR(c.validate());
  CoreOptions o;
  o.instance = instance != 0 ? instance : draw_instance_id();
  o.store_dir = c.resolved_store_dir();
  o.segment_bytes = c.store.segment_bytes;
  o.store_capacity_bytes = c.store.capacity_bytes;
  o.max_object_bytes = c.store.max_object_bytes;
  o.ssd = c.store.engine == "threads" ? SsdEngineKind::kThreadPool : SsdEngineKind::kUring;
  o.queue_depth = c.store.queue_depth;
  o.hook_threads = c.store.hook_threads;
  o.write_bytes_in_flight = c.store.write_bytes_in_flight;
  o.write_bytes_in_flight_while_reading = c.store.write_bytes_in_flight_while_reading;
  o.read_bytes_per_s = c.store.read_bytes_per_s;
  o.tier_bytes = c.tier.capacity_bytes;
  o.budget_bytes = c.tier.budget_bytes;
  o.slot_bytes = c.tier.slot_bytes;
  o.tier_is_device = c.tier.backing == "dax";
  o.tier_huge_pages = c.tier.huge_pages;
  o.tier_path = c.resolved_tier_path(o.instance);
  if (o.tier_is_device) {
    // Opened without O_EXCL: only a device that exists where the configuration says may be.
    TEMPOKV_ASSIGN_OR_RETURN(o.tier_path, resolve_dax_device(o.tier_path));
  }
  o.write_path = c.write_region_path(o.instance);
  if (!c.server.group.empty()) {
    TEMPOKV_ASSIGN_OR_RETURN(o.shared_group, lookup_group(c.server.group));
  }
  o.max_write_bytes_per_session = c.server.max_write_bytes_per_session;
  o.max_requests_per_runtime = c.server.max_requests_per_runtime;
  o.max_manifest_entries = c.server.max_manifest_entries;
  o.max_manifest_entries_per_runtime = c.server.max_manifest_entries_per_runtime;
  o.max_sessions_per_runtime = c.server.max_sessions_per_runtime;
  if (!c.server.tokens_file.empty()) {
    TEMPOKV_ASSIGN_OR_RETURN(o.runtime_tokens, read_tokens_file(c.server.tokens_file));
  }
  o.write_bytes = c.writes.region_bytes;
  o.policy = c.controller.policy;
  o.tick = std::chrono::milliseconds(c.controller.tick_ms);
  o.max_reads_in_flight = c.controller.max_reads_in_flight;
  o.prior_read_bytes_per_s = c.controller.prior_read_bytes_per_s;
  o.write_cost = c.controller.write_cost;
  o.feedback_quantile = c.controller.feedback_quantile;
  o.max_active = c.controller.max_active;
  o.prior_output_tokens = c.controller.prior_output_tokens;
  o.heartbeat_timeout = std::chrono::milliseconds(c.server.heartbeat_timeout_ms);
  o.server_name = "tempokvd 0.1.0";
  std::string profile = c.controller.profile;
  const bool is_path = profile.find('/') != std::string::npos ||
                       std::filesystem::path(profile).extension() == ".json";
  if (!is_path) profile = profiles_dir + "/" + profile + ".json";
  Result<CostProfile> p = CostProfile::load(profile);
  if (!p.is_ok()) {
    return Status::invalid_argument("controller.profile: " + p.status().to_string());
  }
  o.profile = *p;
  return o;
}

Result<std::unique_ptr<Daemon>> Daemon::start(RealExecutor& executor, const DaemonConfig& config,
                                              const std::string& profiles_dir) {
  TEMPOKV_ASSIGN_OR_RETURN(CoreOptions options, core_options(config, profiles_dir));
  TEMPOKV_RETURN_IF_ERROR(prepare_data_dir(config.data_dir, options.shared_group));
  TEMPOKV_ASSIGN_OR_RETURN(const int lock_fd, lock_data_dir(config.data_dir));
  std::unique_ptr<Daemon> d(new Daemon());
  d->lock_fd_ = lock_fd;
  d->data_dir_ = config.data_dir;
  // Shared files of the last daemon on this data_dir (SIGKILLed, crashed) are removed, those it
  // made in tier.dir and nothing else; the new ones are recorded before they exist, so whatever
  // this daemon leaves is found the same way.
  SharedFilePlace place{config.tier.dir, ""};
  if (config.tier.backing != "dax" && !config.tier.path.empty()) {
    place.tier_name = std::filesystem::path(config.tier.path).filename().string();
  }
  TEMPOKV_ASSIGN_OR_RETURN(d->notices_, remove_recorded_shared_files(config.data_dir, place));
  std::vector<std::string> shared = {options.write_path};
  if (!options.tier_is_device) shared.push_back(options.tier_path);
  TEMPOKV_RETURN_IF_ERROR(record_shared_files(config.data_dir, shared));
  ServerOptions so;
  so.endpoint = config.resolved_endpoint();
  so.heartbeat_timeout = options.heartbeat_timeout;
  so.max_sessions = config.server.max_sessions;
  so.max_queued_messages = config.server.max_queued_messages;
  // The core first (the store's scan and the tier's population take a while): the endpoint
  // appears only when the daemon can answer, so a client's hello never waits on the start.
  Daemon* self = d.get();
  TEMPOKV_ASSIGN_OR_RETURN(
      d->core_, ServiceCore::open(executor, options,
                                  [self](uint64_t session, std::vector<std::byte> message) {
                                    if (self->server_) self->server_->send(session, message);
                                  }));
  const std::string endpoint = config.resolved_endpoint();
  const std::string socket_path = endpoint.starts_with("ipc://") ? endpoint.substr(6) : "";
  struct stat st {};
  if (!socket_path.empty() && lstat(socket_path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
    // ZeroMQ unlinks the path before binding: refuse rather than remove someone's file.
    return Status::failed_precondition("server.endpoint " + endpoint + " names a file that is " +
                                       "not a socket; tempokvd never removes it");
  }
  TEMPOKV_ASSIGN_OR_RETURN(d->server_, Server::start(executor, so));
  if (!socket_path.empty() && options.shared_group) {
    TEMPOKV_RETURN_IF_ERROR(share_with_group(socket_path, *options.shared_group));
  } else if (!socket_path.empty() && chmod(socket_path.c_str(), 0600) != 0) {
    return Status::from_errno(errno, "chmod 0600 " + socket_path);
  }
  Server* server = d->server_.get();
  d->core_->set_transport_metrics([server](std::vector<Metric>& m) {
    const ServerStats s = server->stats();
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
    // A summary: quantiles over the recent replies, sum and count over all of them.
    const char* help = "Request receipt to reply (quantiles over recent replies)";
    for (double q : {0.5, 0.99, 0.999}) {
      m.push_back({"reply_latency_seconds", help, MetricType::kSummary,
                   {{"quantile", format_metric_value(q)}}, server->latency_quantile(q)});
    }
    m.push_back({"reply_latency_seconds_sum", help, MetricType::kSummary, {},
                 server->latency_sum_seconds()});
    m.push_back({"reply_latency_seconds_count", help, MetricType::kSummary, {},
                 double(server->latency_count())});
  });
  if (!config.server.metrics_address.empty()) {
    ServiceCore* core = d->core_.get();
    TEMPOKV_ASSIGN_OR_RETURN(d->metrics_,
                             MetricsHttpServer::start(executor, config.server.metrics_address,
                                                      [core] { return core->metrics_text(); }));
    TEMPOKV_RETURN_IF_ERROR(d->metrics_->add_page(
        "/claims", {"application/json", [core] { return core->ended_claims_json(); }}));
  }
  d->server_->attach(*d->core_);
  return d;
}

Daemon::~Daemon() {
  metrics_.reset();
  server_.reset();  // before the core: nothing may reach it any more
  core_.reset();  // removes the shared files
  if (!data_dir_.empty()) ::unlink(shared_record_path(data_dir_).c_str());
  if (lock_fd_ >= 0) ::close(lock_fd_);  // the next daemon on the data directory may start
}

void Daemon::shutdown(std::function<void(Status)> done) {
  server_->stop_reading();
  core_->shutdown(std::move(done));
}

}  // namespace tempokv::service
