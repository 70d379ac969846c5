#include "store/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

namespace tempokv::store {

Result<int> lock_store_dir(const std::string& dir, LockMode mode) {
  std::string path = dir + "/LOCK";
  bool shared = mode == LockMode::kShared;
  int fd = shared ? ::open(path.c_str(), O_RDONLY | O_CLOEXEC)
                  : ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 && shared && errno == ENOENT) return -1;
  if (fd < 0) return Status::from_errno(errno, "open " + path);
  if (flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0) return fd;
  int err = errno;
  ::close(fd);
  if (err != EWOULDBLOCK) return Status::from_errno(err, "flock " + path);
  if (shared) {
    return Status::failed_precondition(
        "store directory " + dir +
        " is open for writing in another process (LOCK is held, e.g. by tempokvd): stop it "
        "before inspecting the store, or ask the daemon for its stats");
  }
  return Status::failed_precondition("store directory " + dir +
                                     " is open in another process (LOCK is held)");
}

}  // namespace tempokv::store
