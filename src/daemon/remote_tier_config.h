// The daemon's options for the shared remote KV tier (docs/cluster.md), made from the [remote]
// table of its configuration: the seeds, timeouts and bounds as given, and the password read from
// remote.password_file at start. The password is held here and in the cluster client alone: it
// never appears in a Status message, a log line or a metric. Pure values; thread-safe as values.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/daemon_config.h"
#include "tempokv/status.h"

namespace tempokv::service {

struct RemoteTierOptions {
  std::vector<std::string> seeds;  // empty: no remote tier
  std::string user;                // ACL user, "" for requirepass
  std::string password;            // "" for no AUTH; never logged
  std::chrono::milliseconds connect_timeout{200};
  std::chrono::milliseconds io_timeout{1000};
  uint64_t write_behind_bytes = 1ULL << 30;
  double node_rate_bytes_per_s = 2.0 * (1ULL << 30);
  uint64_t max_value_bytes = 256ULL << 20;
  std::chrono::milliseconds max_claim_fetch{2000};  // longer remote TTR: the claim recomputes
  bool prefetch = true;  // ControllerOptions::remote_prefetch (remote.prefetch)
  bool enabled() const { return !seeds.empty(); }
};

// Whether this tempokvd was built with the remote tier (hiredis found at configure).
bool remote_tier_built();

// The first line of a password file, which must be a regular file its owner alone may read or
// write. Errors name the field and the path, never the file's content.
Result<std::string> read_password_file(const std::string& field, const std::string& path);

// The remote tier's options for a validated configuration (password read from its file).
// FailedPrecondition naming remote.seeds when they are set and the remote tier is not built.
Result<RemoteTierOptions> remote_tier_options(const DaemonConfig::Remote& remote);

}  // namespace tempokv::service
