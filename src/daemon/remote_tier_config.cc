#include "daemon/remote_tier_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "daemon/data_dir.h"
#include "daemon/remote_tier.h"

namespace tempokv::service {

bool remote_tier_built() {
#ifdef TEMPOKV_HAVE_REMOTE
  return true;
#else
  return false;
#endif
}

#ifndef TEMPOKV_HAVE_REMOTE
Result<std::shared_ptr<RemoteTier>> RemoteTier::open(Executor&, const RemoteTierOptions&) {
  return Status::failed_precondition(
      "the remote tier is not built into this tempokvd (hiredis was not found at configure: "
      "install libhiredis-dev, scripts/install-deps, and rebuild)");
}
#endif

Result<std::string> read_password_file(const std::string& field, const std::string& path) {
  const std::string what = field + " " + path;
  TEMPOKV_RETURN_IF_ERROR(check_owner_only_file(what, path));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return Status::from_errno(errno, what);
  std::string text;
  char buf[512];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Status::from_errno(err, what);
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > 4096) {
      ::close(fd);
      return Status::invalid_argument(what +
                                      " is longer than 4096 bytes: it must hold the "
                                      "password on its first line");
    }
  }
  ::close(fd);
  const size_t eol = text.find('\n');
  if (eol != std::string::npos) text.resize(eol);
  if (!text.empty() && text.back() == '\r') text.pop_back();
  if (text.empty()) return Status::invalid_argument(what + " has an empty first line");
  return text;
}

Result<RemoteTierOptions> remote_tier_options(const DaemonConfig::Remote& r) {
  RemoteTierOptions o;
  if (!r.enabled()) return o;
  if (!remote_tier_built()) {
    return Status::failed_precondition(
        "remote.seeds is set but this tempokvd was built without the remote tier (hiredis was "
        "not found at configure: install libhiredis-dev, scripts/install-deps, and rebuild)");
  }
  o.seeds = r.seeds;
  o.user = r.user;
  if (!r.password_file.empty()) {
    TEMPOKV_ASSIGN_OR_RETURN(o.password,
                             read_password_file("remote.password_file", r.password_file));
  }
  o.connect_timeout = std::chrono::milliseconds(r.connect_timeout_ms);
  o.io_timeout = std::chrono::milliseconds(r.io_timeout_ms);
  o.write_behind_bytes = r.write_behind_bytes;
  o.node_rate_bytes_per_s = r.node_rate_gib_s * static_cast<double>(1ULL << 30);
  o.max_value_bytes = r.max_value_bytes;
  o.max_claim_fetch = std::chrono::milliseconds(r.max_claim_fetch_ms);
  o.prefetch = r.prefetch;
  return o;
}

}  // namespace tempokv::service
