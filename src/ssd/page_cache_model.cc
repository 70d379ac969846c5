#include "ssd/page_cache_model.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace tempokv {
namespace {

constexpr uint64_t kPageBytes = 4096;
constexpr uint64_t kSectorBytes = 512;

Status pread_all(int fd, std::byte* buf, size_t len, uint64_t offset, const std::string& path) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, buf + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::from_errno(errno, "pread " + path);
    if (n == 0) break;  // past the end: the pre-image there is "nothing", kept as zeros
    done += static_cast<size_t>(n);
  }
  return Status::ok();
}

Status pwrite_all(int fd, const std::byte* buf, size_t len, uint64_t offset,
                  const std::string& path) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pwrite(fd, buf + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::from_errno(errno, "pwrite " + path);
    done += static_cast<size_t>(n);
  }
  return Status::ok();
}

}  // namespace

void PageCacheModel::add_file(FileId file, int fd) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char target[4096];
  ssize_t n = ::readlink(link, target, sizeof target - 1);
  std::lock_guard<std::mutex> lock(mu_);
  paths_[file] = n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string();
}

Result<uint64_t> PageCacheModel::before_write(FileId file, uint64_t offset, size_t len) {
  std::string path;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = paths_.find(file);
    if (it == paths_.end() || it->second.empty()) {
      return Status::invalid_argument("power-loss model: file " + std::to_string(file) +
                                      " has no path (add it with a real descriptor)");
    }
    path = it->second;
  }
  Write w{path, file, offset, std::vector<std::byte>(len), State::kInFlight};
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);  // buffered: sees O_DIRECT writes too
  if (fd < 0) return Status::from_errno(errno, "power-loss model: open " + path);
  Status st = pread_all(fd, w.pre_image.data(), len, offset, path);
  ::close(fd);
  TEMPOKV_RETURN_IF_ERROR(st);
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t id = next_id_++;
  writes_.emplace(id, std::move(w));
  return id;
}

void PageCacheModel::write_done(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = writes_.find(id);
  if (it != writes_.end() && it->second.state == State::kInFlight)
    it->second.state = State::kWritten;
}

std::vector<uint64_t> PageCacheModel::sync_issued(FileId file) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> ids;
  for (auto& [id, w] : writes_) {
    if (w.file == file && w.state == State::kWritten) {
      w.state = State::kSyncing;
      ids.push_back(id);
    }
  }
  return ids;
}

void PageCacheModel::sync_done(const std::vector<uint64_t>& ids, bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  for (uint64_t id : ids) {
    auto it = writes_.find(id);
    if (it == writes_.end()) continue;
    if (ok)
      writes_.erase(it);
    else
      it->second.state = State::kNeverDurable;
  }
}

uint64_t PageCacheModel::undurable_writes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return writes_.size();
}

Result<PageCacheModel::CutReport> PageCacheModel::power_cut() {
  std::lock_guard<std::mutex> lock(mu_);
  CutReport report;
  // Newest first, so that overlapping lost writes restore the oldest pre-image last.
  for (auto it = writes_.rbegin(); it != writes_.rend(); ++it) {
    const Write& w = it->second;
    ++report.writes;
    int fd = ::open(w.path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) continue;  // deleted since: nothing of it survives anyway
    if (fd < 0) return Status::from_errno(errno, "power-loss model: open " + w.path);
    Status st;
    uint64_t end = w.offset + w.pre_image.size();
    for (uint64_t page = w.offset; page < end && st.is_ok();) {
      uint64_t next = std::min(end, (page / kPageBytes + 1) * kPageBytes);
      // Kept (no sector restored), lost (every sector) or torn: any non-empty proper subset of
      // its sectors kept, in any position (a drive may persist them in any order).
      const uint64_t sectors = (next - page + kSectorBytes - 1) / kSectorBytes;
      const uint64_t all = sectors >= 64 ? ~0ULL : (1ULL << sectors) - 1;
      uint64_t kept = 0;  // bit s: sector s of this piece survives
      switch (rng_() % 3) {
        case 0:
          kept = all;
          ++report.pages_kept;
          break;
        case 1:
          ++report.pages_lost;
          break;
        default:
          kept = sectors > 1 ? 1 + rng_() % (all - 1) : 0;
          ++report.pages_torn;
      }
      for (uint64_t s = 0; s < sectors && st.is_ok(); ++s) {
        if (kept & (1ULL << s)) continue;
        const uint64_t from = page + s * kSectorBytes;
        const uint64_t to = std::min(next, from + kSectorBytes);
        st = pwrite_all(fd, w.pre_image.data() + (from - w.offset), to - from, from, w.path);
      }
      page = next;
    }
    if (st.is_ok() && ::fdatasync(fd) != 0) st = Status::from_errno(errno, "fdatasync " + w.path);
    ::close(fd);
    TEMPOKV_RETURN_IF_ERROR(st);
  }
  writes_.clear();
  return report;
}

}  // namespace tempokv
