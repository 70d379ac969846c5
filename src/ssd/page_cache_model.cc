#include "ssd/page_cache_model.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "common/file_io.h"

namespace tempokv {
namespace {

constexpr uint64_t kPageBytes = 4096;
constexpr uint64_t kSectorBytes = 512;

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
  // Past the end of the file the pre-image is "nothing", kept as zeros.
  const Result<size_t> pre =
      pread_range(fd, w.pre_image.data(), len, offset).result("pread " + path);
  ::close(fd);
  TEMPOKV_RETURN_IF_ERROR(pre.status());
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
        const RangeIo n = pwrite_range(fd, w.pre_image.data() + (from - w.offset), to - from, from);
        if (n.error != 0 || n.bytes != to - from) {
          st = Status::from_errno(n.error != 0 ? n.error : EIO, "pwrite " + w.path);
        }
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
