#include "service/daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "service/service_metrics.h"

namespace tempokv::service {

Result<CoreOptions> core_options(const DaemonConfig& c, const std::string& profiles_dir) {
  TEMPOKV_RETURN_IF_ERROR(c.validate());
  CoreOptions o;
  o.store_dir = c.resolved_store_dir();
  o.segment_bytes = c.store.segment_bytes;
  o.store_capacity_bytes = c.store.capacity_bytes;
  o.max_object_bytes = c.store.max_object_bytes;
  o.ssd = c.store.engine == "threads" ? SsdEngineKind::kThreadPool : SsdEngineKind::kUring;
  o.queue_depth = c.store.queue_depth;
  o.read_bytes_per_s = c.store.read_bytes_per_s;
  o.tier_bytes = c.tier.capacity_bytes;
  o.budget_bytes = c.tier.budget_bytes;
  o.slot_bytes = c.tier.slot_bytes;
  o.tier_is_device = c.tier.backing == "dax";
  o.tier_huge_pages = c.tier.huge_pages;
  o.tier_path = c.tier.path.empty() ? default_shm_path("tier") : c.tier.path;
  o.write_path = default_shm_path("writes");
  o.write_bytes = c.writes.region_bytes;
  o.policy = c.controller.policy;
  o.tick = std::chrono::milliseconds(c.controller.tick_ms);
  o.max_reads_in_flight = c.controller.max_reads_in_flight;
  o.prior_read_bytes_per_s = c.controller.prior_read_bytes_per_s;
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

namespace {

// Shared files of daemons that died without cleaning up (SIGKILL, crash): their pid is gone.
void remove_stale_shared_files() {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator("/dev/shm", ec)) {
    const std::string name = e.path().filename().string();
    const std::string prefix = "tempokvd-";
    if (name.rfind(prefix, 0) != 0) continue;
    const size_t dash = name.find('-', prefix.size());
    if (dash == std::string::npos) continue;
    const std::string pid = name.substr(prefix.size(), dash - prefix.size());
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH) fs::remove(e.path(), ec);
  }
}

// Takes data_dir/tempokvd.lock (flock, held for the daemon's life, released by the kernel even
// on SIGKILL): a second daemon on the same data directory would scan the store under a live
// writer and steal its socket.
Result<int> lock_data_dir(const std::string& dir) {
  const std::string path = dir + "/tempokvd.lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return Status::from_errno(errno, "open " + path);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char pid[32] = {};
    const ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
    ::close(fd);
    if (err != EWOULDBLOCK) return Status::from_errno(err, "flock " + path);
    return Status::failed_precondition(
        "data_dir " + dir + " is in use by another tempokvd (pid " +
        (n > 0 ? std::string(pid, static_cast<size_t>(n)) : std::string("?")) +
        ", lock " + path + "); stop it first or give this one another data_dir");
  }
  const std::string mine = std::to_string(getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, mine.data(), mine.size(), 0) < 0) {
    const int err = errno;
    ::close(fd);
    return Status::from_errno(err, "write " + path);
  }
  return fd;
}

}  // namespace

Result<std::unique_ptr<Daemon>> Daemon::start(RealExecutor& executor, const DaemonConfig& config,
                                              const std::string& profiles_dir) {
  TEMPOKV_ASSIGN_OR_RETURN(CoreOptions options, core_options(config, profiles_dir));
  std::error_code ec;
  std::filesystem::create_directories(config.data_dir, ec);
  if (ec) return Status::io_error("create data_dir " + config.data_dir + ": " + ec.message());
  TEMPOKV_ASSIGN_OR_RETURN(const int lock_fd, lock_data_dir(config.data_dir));
  std::unique_ptr<Daemon> d(new Daemon());
  d->lock_fd_ = lock_fd;
  remove_stale_shared_files();
  ServerOptions so;
  so.endpoint = config.resolved_endpoint();
  so.heartbeat_timeout = options.heartbeat_timeout;
  so.max_sessions = config.server.max_sessions;
  // The core first (the store's scan and the tier's population take a while): the endpoint
  // appears only when the daemon can answer, so a client's hello never waits on the start.
  Daemon* self = d.get();
  TEMPOKV_ASSIGN_OR_RETURN(
      d->core_, ServiceCore::open(executor, options,
                                  [self](uint64_t session, std::vector<std::byte> message) {
                                    if (self->server_) self->server_->send(session, message);
                                  }));
  TEMPOKV_ASSIGN_OR_RETURN(d->server_, Server::start(executor, so));
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
  }
  d->server_->attach(*d->core_);
  return d;
}

Daemon::~Daemon() {
  metrics_.reset();
  server_.reset();  // before the core: nothing may reach it any more
  core_.reset();
  if (lock_fd_ >= 0) ::close(lock_fd_);  // the next daemon on the data directory may start
}

void Daemon::shutdown(std::function<void(Status)> done) {
  server_->stop_reading();
  core_->shutdown(std::move(done));
}

}  // namespace tempokv::service
