// DaemonConfig::validate and the two paths derived from data_dir.
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "common/units.h"
#include "controller/controller.h"
#include "daemon/daemon_config.h"
#include "daemon/host_port.h"
#include "tempokv/protocol.h"

namespace tempokv::service {
namespace {

// sun_path holds 108 bytes with the terminating NUL; ZMQ refuses longer ipc paths at bind.
constexpr size_t kMaxIpcPathBytes = 107;

Status bad(std::string_view field, const std::string& why) {
  return Status::invalid_argument(std::string(field) + " " + why);
}

Status nonzero_block_multiple(std::string_view field, uint64_t v) {
  if (v == 0 || !is_aligned(v, kBlockBytes)) {
    return bad(field, "must be a non-zero multiple of 4096 (got " + std::to_string(v) + ")");
  }
  return Status::ok();
}

Status in_range(std::string_view field, uint64_t v, uint64_t lo, uint64_t hi) {
  if (v < lo || v > hi) {
    return bad(field, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (got " +
                          std::to_string(v) + ")");
  }
  return Status::ok();
}

Status check_endpoint(const std::string& endpoint, bool allow_remote) {
  constexpr std::string_view kField = "server.endpoint";
  if (endpoint.starts_with("ipc://")) {
    const std::string_view path = std::string_view(endpoint).substr(6);
    if (path.empty()) return bad(kField, "'" + endpoint + "' has an empty ipc path");
    if (path.size() > kMaxIpcPathBytes) {
      return bad(kField, "ipc path is " + std::to_string(path.size()) + " bytes, above the " +
                             std::to_string(kMaxIpcPathBytes) +
                             " a Unix socket allows; shorten data_dir or set the endpoint");
    }
    return Status::ok();
  }
  if (endpoint.starts_with("tcp://")) {
    Result<HostPort> hp = parse_host_port(std::string_view(endpoint).substr(6));
    if (!hp.is_ok() || hp->port == 0) {
      return bad(kField, "'" + endpoint + "' must be tcp://HOST:PORT with PORT in [1, 65535]");
    }
    if (!allow_remote && !is_loopback_host(hp->host)) {
      return bad(kField, "host '" + hp->host +
                             "' is not a loopback address (127.x.x.x, ::1, localhost); the "
                             "protocol has no authentication, so set server.allow_remote = true "
                             "to listen there anyway");
    }
    return Status::ok();
  }
  return bad(kField, "'" + endpoint + "' must be ipc://PATH or tcp://HOST:PORT");
}

Status check_policy(const std::string& policy) {
  if (is_controller_configuration(policy)) return Status::ok();
  return bad("controller.policy",
             "'" + policy + "' is not one of " + controller_configuration_names());
}

Status check_profile(const std::string& profile) {
  constexpr std::string_view kField = "controller.profile";
  if (profile.empty()) return bad(kField, "is empty");
  if (profile.find('/') != std::string::npos || profile.ends_with(".json")) return Status::ok();
  for (char ch : profile) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.';
    if (!ok) {
      return bad(kField, "'" + profile +
                             "' is neither a profile name ([A-Za-z0-9._-]) nor a path to a .json");
    }
  }
  return Status::ok();
}

Status validate_server(const DaemonConfig& c) {
  TEMPOKV_RETURN_IF_ERROR(check_endpoint(c.resolved_endpoint(), c.server.allow_remote));
  const std::string& m = c.server.metrics_address;
  if (!m.empty()) {
    Result<HostPort> hp = parse_host_port(m);
    if (!hp.is_ok()) {
      return bad("server.metrics_address",
                 "'" + m + "' must be HOST:PORT ([V6]:PORT) with PORT in [0, 65535], or \"\"");
    }
    if (!c.server.allow_remote && !is_loopback_host(hp->host)) {
      return bad("server.metrics_address",
                 "host '" + hp->host + "' is not a loopback address; /metrics has no "
                 "authentication, so set server.allow_remote = true to serve it there anyway");
    }
  }
  TEMPOKV_RETURN_IF_ERROR(
      in_range("server.heartbeat_timeout_ms", c.server.heartbeat_timeout_ms, 1, 86'400'000));
  TEMPOKV_RETURN_IF_ERROR(
      in_range("server.hello_timeout_ms", c.server.hello_timeout_ms, 1, 86'400'000));
  TEMPOKV_RETURN_IF_ERROR(in_range("server.max_sessions", c.server.max_sessions, 1, 1'000'000));
  TEMPOKV_RETURN_IF_ERROR(in_range("server.max_sessions_per_runtime",
                                   c.server.max_sessions_per_runtime, 1, 1'000'000));
  TEMPOKV_RETURN_IF_ERROR(
      in_range("server.max_queued_messages", c.server.max_queued_messages, 1, 100'000));
  TEMPOKV_RETURN_IF_ERROR(in_range("server.max_requests_per_runtime",
                                   c.server.max_requests_per_runtime, 1, 1'000'000));
  TEMPOKV_RETURN_IF_ERROR(in_range("server.max_manifest_entries", c.server.max_manifest_entries,
                                   1, kMaxManifestEntries));
  TEMPOKV_RETURN_IF_ERROR(in_range("server.max_manifest_entries_per_runtime",
                                   c.server.max_manifest_entries_per_runtime,
                                   c.server.max_manifest_entries, 1ULL << 32));
  const uint64_t object = round_up(c.store.max_object_bytes, kBlockBytes);
  if (c.server.max_write_bytes_per_session < object) {
    return bad("server.max_write_bytes_per_session",
               "must be at least store.max_object_bytes rounded up to 4 KiB (" +
                   std::to_string(object) + "), got " +
                   std::to_string(c.server.max_write_bytes_per_session));
  }
  return Status::ok();
}

Status validate_store(const DaemonConfig::Store& s) {
  if (s.engine != "uring" && s.engine != "threads") {
    return bad("store.engine", "'" + s.engine + "' is not one of uring, threads");
  }
  TEMPOKV_RETURN_IF_ERROR(nonzero_block_multiple("store.segment_bytes", s.segment_bytes));
  if (s.segment_bytes < 4 * kBlockBytes) {
    return bad("store.segment_bytes",
               "must be at least 16384 (got " + std::to_string(s.segment_bytes) + ")");
  }
  TEMPOKV_RETURN_IF_ERROR(nonzero_block_multiple("store.capacity_bytes", s.capacity_bytes));
  if (s.capacity_bytes < s.segment_bytes) {
    // Appended piecewise: `"(" + std::string&&` trips GCC 12's -Wrestrict false positive at -O3.
    std::string why = "(";
    why += std::to_string(s.capacity_bytes);
    why += ") is smaller than store.segment_bytes (" + std::to_string(s.segment_bytes) + ")";
    return bad("store.capacity_bytes", why);
  }
  // A record plus the segment header and the seal must fit in one segment (StoreOptions).
  if (s.max_object_bytes == 0 ||
      round_up(s.max_object_bytes, kBlockBytes) + 3 * kBlockBytes > s.segment_bytes) {
    return bad("store.max_object_bytes",
               "must be above zero and, plus 12 KiB of headers, fit in store.segment_bytes (got " +
                   std::to_string(s.max_object_bytes) + " of " + std::to_string(s.segment_bytes) +
                   ")");
  }
  if (!std::isfinite(s.read_bytes_per_s) || s.read_bytes_per_s < 0) {
    return bad("store.read_bytes_per_s",
               "must be zero (no cap) or a positive, finite rate (got " +
                   std::to_string(s.read_bytes_per_s) + ")");
  }
  TEMPOKV_RETURN_IF_ERROR(in_range("store.hook_threads", s.hook_threads, 0, 64));
  return in_range("store.queue_depth", s.queue_depth, 1, 32768);
}

Status validate_tier(const DaemonConfig::Tier& t) {
  TEMPOKV_RETURN_IF_ERROR(nonzero_block_multiple("tier.slot_bytes", t.slot_bytes));
  if (t.capacity_bytes == 0 || !is_aligned(t.capacity_bytes, t.slot_bytes)) {
    return bad("tier.capacity_bytes", "must be a non-zero multiple of tier.slot_bytes (got " +
                                          std::to_string(t.capacity_bytes) + ", slot_bytes " +
                                          std::to_string(t.slot_bytes) + ")");
  }
  if (t.budget_bytes == 0 || t.budget_bytes >= t.capacity_bytes) {
    return bad("tier.budget_bytes", "must be above zero and below tier.capacity_bytes (got " +
                                        std::to_string(t.budget_bytes) + " of " +
                                        std::to_string(t.capacity_bytes) + ")");
  }
  if (t.backing != "shm" && t.backing != "file" && t.backing != "dax") {
    return bad("tier.backing", "'" + t.backing + "' is not one of shm, file, dax");
  }
  if (t.backing == "dax") {
    // Directly in /dev, without `.` or `..`: the daemon opens it without O_EXCL (it resolves
    // symbolic links at start, resolve_dax_device, and checks the device again).
    namespace fs = std::filesystem;
    const fs::path path(t.path);
    if (path.parent_path() != "/dev" || !path.filename().string().starts_with("dax") ||
        path.lexically_normal() != path) {
      return bad("tier.path", "must name a /dev/dax* device when tier.backing is 'dax' (got '" +
                                  t.path + "')");
    }
  } else if (t.path.find('/') != std::string::npos) {
    // Confined to tier.dir: the daemon creates the file there (and refuses an existing one it
    // did not create), so a configuration can never make it overwrite or remove another file.
    namespace fs = std::filesystem;
    const fs::path path = fs::path(t.path).lexically_normal();
    const fs::path dir = (fs::path(t.dir) / "").lexically_normal();
    if (path.parent_path() / "" != dir || t.path.find("..") != std::string::npos) {
      return bad("tier.path", "'" + t.path + "' is not a file directly in tier.dir ('" + t.dir +
                                  "'); set tier.dir to the directory that may hold it");
    }
  }
  if (t.backing != "dax" && (t.dir.empty() || t.dir[0] != '/')) {
    return bad("tier.dir", "must be an absolute directory (got '" + t.dir + "')");
  }
  return Status::ok();
}

Status validate_controller(const DaemonConfig::Controller& c) {
  TEMPOKV_RETURN_IF_ERROR(check_policy(c.policy));
  TEMPOKV_RETURN_IF_ERROR(in_range("controller.tick_ms", c.tick_ms, 1, 60'000));
  TEMPOKV_RETURN_IF_ERROR(
      in_range("controller.max_reads_in_flight", c.max_reads_in_flight, 1, 4096));
  if (!std::isfinite(c.prior_read_bytes_per_s) || c.prior_read_bytes_per_s <= 0) {
    return bad(
        "controller.prior_read_bytes_per_s",
        "must be a positive, finite rate (got " + std::to_string(c.prior_read_bytes_per_s) + ")");
  }
  if (!std::isfinite(c.write_cost) || c.write_cost < 0) {
    return bad("controller.write_cost", "must be zero or a positive, finite number (got " +
                                            std::to_string(c.write_cost) + ")");
  }
  if (!(c.feedback_quantile >= 0 && c.feedback_quantile < 1)) {
    return bad("controller.feedback_quantile",
               "must be at least 0 and below 1 (got " + std::to_string(c.feedback_quantile) + ")");
  }
  TEMPOKV_RETURN_IF_ERROR(check_profile(c.profile));
  TEMPOKV_RETURN_IF_ERROR(in_range("controller.max_active", c.max_active, 1, 65536));
  return in_range("controller.prior_output_tokens", c.prior_output_tokens, 1, 1'000'000);
}

// The [remote] table: checked whether or not seeds is empty, so a typo shows before it is used.
Status validate_remote(const DaemonConfig::Remote& r, const DaemonConfig::Store& store) {
  for (size_t i = 0; i < r.seeds.size(); ++i) {
    const std::string& seed = r.seeds[i];
    Result<HostPort> hp = parse_host_port(seed);
    if (!hp.is_ok() || hp->port == 0 || hp->host.empty()) {
      return bad("remote.seeds", "'" + seed + "' must be HOST:PORT ([V6]:PORT) with PORT in "
                                              "[1, 65535]");
    }
    for (size_t j = 0; j < i; ++j) {
      if (r.seeds[j] == seed) return bad("remote.seeds", "lists '" + seed + "' twice");
    }
  }
  if (!r.user.empty() && r.password_file.empty()) {
    return bad("remote.user", "is set ('" + r.user + "') but remote.password_file is \"\": an "
                              "ACL user needs a password");
  }
  if (!r.password_file.empty() && r.password_file[0] != '/') {
    return bad("remote.password_file",
               "must be an absolute path (got '" + r.password_file + "')");
  }
  TEMPOKV_RETURN_IF_ERROR(in_range("remote.connect_timeout_ms", r.connect_timeout_ms, 1, 60'000));
  TEMPOKV_RETURN_IF_ERROR(in_range("remote.io_timeout_ms", r.io_timeout_ms, 1, 600'000));
  TEMPOKV_RETURN_IF_ERROR(
      in_range("remote.max_claim_fetch_ms", r.max_claim_fetch_ms, 1, 60'000));
  if (r.write_behind_bytes < store.max_object_bytes) {
    return bad("remote.write_behind_bytes",
               "must be at least store.max_object_bytes (" +
                   std::to_string(store.max_object_bytes) + "), so any put can be published (got " +
                   std::to_string(r.write_behind_bytes) + ")");
  }
  if (r.max_value_bytes < store.max_object_bytes) {
    return bad("remote.max_value_bytes",
               "must be at least store.max_object_bytes (" +
                   std::to_string(store.max_object_bytes) + ") (got " +
                   std::to_string(r.max_value_bytes) + ")");
  }
  if (!std::isfinite(r.node_rate_gib_s) || r.node_rate_gib_s <= 0) {
    return bad("remote.node_rate_gib_s",
               "must be a positive, finite rate (got " + std::to_string(r.node_rate_gib_s) + ")");
  }
  return Status::ok();
}

// dir/name without a doubled slash ("/data/" and "/data" give "/data/name").
std::string in_data_dir(std::string dir, std::string_view name) {
  while (dir.size() > 1 && dir.ends_with('/')) dir.pop_back();
  if (!dir.ends_with('/')) dir += '/';
  return dir + std::string(name);
}

// 16 hex digits: a file name no other daemon instance (in any container) uses.
std::string instance_name(uint64_t instance) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(instance));
  return buf;
}

}  // namespace

std::string DaemonConfig::resolved_endpoint() const {
  return server.endpoint.empty() ? "ipc://" + in_data_dir(data_dir, "tempokvd.sock")
                                 : server.endpoint;
}

std::string DaemonConfig::resolved_tier_path(uint64_t instance) const {
  if (tier.backing == "dax") return tier.path;
  if (tier.path.empty()) {
    return in_data_dir(tier.dir, "tempokvd-" + instance_name(instance) + "-tier");
  }
  if (tier.path.find('/') == std::string::npos) return in_data_dir(tier.dir, tier.path);
  return tier.path;
}

std::string DaemonConfig::write_region_path(uint64_t instance) const {
  return in_data_dir(tier.dir, "tempokvd-" + instance_name(instance) + "-writes");
}

std::string DaemonConfig::key_filter_path(uint64_t instance) const {
  return in_data_dir(tier.dir, "tempokvd-" + instance_name(instance) + "-keys");
}

std::string DaemonConfig::resolved_store_dir() const {
  return store.dir.empty() ? in_data_dir(data_dir, "store") : store.dir;
}

Status DaemonConfig::validate() const {
  if (data_dir.empty()) return bad("data_dir", "is empty");
  TEMPOKV_RETURN_IF_ERROR(validate_server(*this));
  TEMPOKV_RETURN_IF_ERROR(validate_store(store));
  TEMPOKV_RETURN_IF_ERROR(validate_tier(tier));
  TEMPOKV_RETURN_IF_ERROR(nonzero_block_multiple("writes.region_bytes", writes.region_bytes));
  TEMPOKV_RETURN_IF_ERROR(validate_controller(controller));
  return validate_remote(remote, store);
}

}  // namespace tempokv::service
