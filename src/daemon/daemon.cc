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

#include "daemon/accept_guard.h"
#include "daemon/data_dir.h"
#include "daemon/service_metrics.h"
#include "daemon/transport_metrics.h"
#include "daemon/shared_file.h"

namespace tempokv::service {

Result<std::map<std::string, std::string>> read_tokens_file(const std::string& path) {
  const std::string field = "server.tokens_file " + path;
  TEMPOKV_RETURN_IF_ERROR(check_owner_only_file(field, path));
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
  o.write_dir = c.write_region_path(o.instance);
  o.key_filter_path = c.key_filter_path(o.instance);
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
  TEMPOKV_ASSIGN_OR_RETURN(o.remote, remote_tier_options(c.remote));
  o.write_bytes = c.writes.region_bytes;
  o.policy = c.controller.policy;
  o.tick = std::chrono::milliseconds(c.controller.tick_ms);
  o.max_reads_in_flight = c.controller.max_reads_in_flight;
  o.prior_read_bytes_per_s = c.controller.prior_read_bytes_per_s;
  o.write_cost = c.controller.write_cost;
  o.feedback_quantile = c.controller.feedback_quantile;
  o.max_active = c.controller.max_active;
  o.prior_output_tokens = c.controller.prior_output_tokens;
  o.rhythm_horizon = c.controller.rhythm_horizon;
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

uint64_t own_descriptors(const DaemonConfig& c) {
  // Every segment of a full store open at once (and one being rolled), the /metrics server's
  // connections, and a fixed part: the executor's and ZeroMQ's epoll, event and timer
  // descriptors, the SSD engine's, the lock, the standard streams, the shared files while they
  // are mapped.
  const uint64_t segments = c.store.capacity_bytes / c.store.segment_bytes + 2;
  const uint64_t metrics =
      c.server.metrics_address.empty() ? 0 : MetricsHttpOptions{}.max_connections;
  return 64 + segments + metrics + AcceptGuard::kHeadroom;
}

Result<uint64_t> connection_budget(const DaemonConfig& c, uint64_t fd_limit) {
  const uint64_t own = own_descriptors(c);
  const uint64_t budget = fd_limit > own ? fd_limit - own : 0;
  if (c.server.max_sessions > budget) {
    return Status::failed_precondition(
        "server.max_sessions (" + std::to_string(c.server.max_sessions) + ") needs as many " +
        "connections, but the open-files limit (RLIMIT_NOFILE " + std::to_string(fd_limit) +
        ", raised to its hard limit) leaves " + std::to_string(budget) + " after the " +
        std::to_string(own) + " descriptors the daemon keeps for itself (store segments, " +
        "/metrics): raise the limit (ulimit -n, systemd LimitNOFILE=) or lower " +
        "server.max_sessions");
  }
  return budget;
}

Result<std::unique_ptr<Daemon>> Daemon::start(RealExecutor& executor, const DaemonConfig& config,
                                              const std::string& profiles_dir) {
  TEMPOKV_ASSIGN_OR_RETURN(CoreOptions options, core_options(config, profiles_dir));
  // Descriptors first: every connection takes one, and libzmq aborts when they run out.
  TEMPOKV_ASSIGN_OR_RETURN(const uint64_t fd_limit, raise_open_files_limit());
  TEMPOKV_ASSIGN_OR_RETURN(const uint64_t connections, connection_budget(config, fd_limit));
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
  std::vector<std::string> shared = {options.key_filter_path, options.write_dir};
  if (!options.tier_is_device) shared.push_back(options.tier_path);
  TEMPOKV_RETURN_IF_ERROR(record_shared_files(config.data_dir, shared));
  ServerOptions so;
  so.endpoint = config.resolved_endpoint();
  so.heartbeat_timeout = options.heartbeat_timeout;
  so.max_sessions = config.server.max_sessions;
  so.max_queued_messages = config.server.max_queued_messages;
  so.hello_timeout = std::chrono::milliseconds(config.server.hello_timeout_ms);
  so.fd_limit = fd_limit;
  so.max_connections = connections;
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
  d->core_->set_transport_metrics(
      [server](std::vector<Metric>& m) { add_transport_metrics(*server, m); });
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
