#include "daemon/data_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

namespace tempokv::service {
namespace {

std::string mode_string(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

}  // namespace

Status prepare_data_dir(const std::string& dir, std::optional<uint32_t> group) {
  const std::string field = "data_dir " + dir;
  const std::filesystem::path path(dir);
  if (path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) return Status::io_error("create the parent of " + field + ": " + ec.message());
  }
  if (mkdir(dir.c_str(), 0700) == 0) {
    // Explicit modes, whatever the umask: a group that runs engines may reach the socket.
    if (group && (chown(dir.c_str(), static_cast<uid_t>(-1), *group) != 0 ||
                  chmod(dir.c_str(), 0710) != 0)) {
      return Status::from_errno(
          errno, "give " + field + " to group " + std::to_string(*group) + " (server.group)");
    }
    if (!group && chmod(dir.c_str(), 0700) != 0) return Status::from_errno(errno, "chmod " + field);
    return Status::ok();
  }
  if (errno != EEXIST) return Status::from_errno(errno, "create " + field);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return Status::from_errno(errno, "stat " + field);
  if (!S_ISDIR(st.st_mode)) return Status::failed_precondition(field + " is not a directory");
  if ((st.st_mode & 002) != 0) {
    return Status::failed_precondition(
        field + " may be written by anyone (mode " + mode_string(st.st_mode) +
        "); tempokvd trusts the files it finds there (tempokvd.shared names files it removes): "
        "chmod o-w it");
  }
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    return Status::failed_precondition(field + " belongs to uid " + std::to_string(st.st_uid) +
                                       ", not to the daemon's user (uid " +
                                       std::to_string(geteuid()) + ")");
  }
  return Status::ok();
}

Result<int> lock_data_dir(const std::string& dir) {
  const std::string path = dir + "/tempokvd.lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::from_errno(errno, "open " + path);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char pid[32] = {};
    const ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
    ::close(fd);
    if (err != EWOULDBLOCK) return Status::from_errno(err, "flock " + path);
    return Status::failed_precondition(
        "data_dir " + dir + " is in use by another tempokvd (pid " +
        (n > 0 ? std::string(pid, static_cast<size_t>(n)) : std::string("?")) + ", lock " + path +
        "); stop it first or give this one another data_dir");
  }
  const std::string mine = std::to_string(getpid());
  // A lock file an earlier version made group-readable is the daemon's own: 0600 now.
  if (fchmod(fd, 0600) != 0 || ftruncate(fd, 0) != 0 ||
      pwrite(fd, mine.data(), mine.size(), 0) < 0) {
    const int err = errno;
    ::close(fd);
    return Status::from_errno(err, "write " + path);
  }
  return fd;
}

Status check_owner_only_file(const std::string& what, const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return Status::from_errno(errno, what);
  if (!S_ISREG(st.st_mode)) return Status::invalid_argument(what + " is not a regular file");
  if ((st.st_mode & 0077) != 0) {
    return Status::invalid_argument(what + " is accessible to users other than its owner (mode " +
                                    mode_string(st.st_mode) + "); chmod 600 it");
  }
  return Status::ok();
}

}  // namespace tempokv::service
