#include "store/power_loss_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "common/file_io.h"
#include "common/units.h"

namespace tempokv::store {
namespace {

constexpr size_t kSector = 512;

std::string dir_of(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}

// Reads len bytes at offset of path (zeros past its end); empty when it cannot be opened.
std::vector<std::byte> read_range(const std::string& path, uint64_t offset, size_t len) {
  std::vector<std::byte> out(len);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  (void)pread_range(fd, out.data(), len, offset);
  ::close(fd);
  return out;
}

void write_range(const std::string& path, uint64_t offset, const std::byte* data, size_t len) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;  // gone: nothing to restore
  (void)pwrite_range(fd, data, len, offset);
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void PowerLossFiles::crash_after_ops(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  countdown_ = n;
}

void PowerLossFiles::crash() {
  std::lock_guard<std::mutex> lock(mu_);
  crashed_ = true;
}

bool PowerLossFiles::crashed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return crashed_ || (also_crashed_ && also_crashed_());
}

void PowerLossFiles::set_crash_listener(std::function<void()> listener) {
  std::lock_guard<std::mutex> lock(mu_);
  crash_listener_ = std::move(listener);
}

void PowerLossFiles::set_also_crashed(std::function<bool()> also_crashed) {
  std::lock_guard<std::mutex> lock(mu_);
  also_crashed_ = std::move(also_crashed);
}

uint64_t PowerLossFiles::operations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seq_;
}

Status PowerLossFiles::enter(const char* what, const std::string& path) {
  ++seq_;
  if (!crashed_ && countdown_ > 0 && --countdown_ == 0) {
    crashed_ = true;
    if (crash_listener_) crash_listener_();
  }
  if (crashed_ || (also_crashed_ && also_crashed_())) {
    crashed_ = true;
    return Status::io_error(std::string("injected power loss: ") + what + " " + path +
                            " after the crash");
  }
  return Status::ok();
}

Result<int> PowerLossFiles::create(const std::string& path, bool direct) {
  std::lock_guard<std::mutex> lock(mu_);
  TEMPOKV_RETURN_IF_ERROR(enter("create", path));
  TEMPOKV_ASSIGN_OR_RETURN(int fd, real_file_ops().create(path, direct));
  names_.push_back({seq_, Kind::kCreate, dir_of(path), path, ""});
  return fd;
}

Status PowerLossFiles::allocate(int fd, const std::string& path, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  TEMPOKV_RETURN_IF_ERROR(enter("allocate", path));
  return real_file_ops().allocate(fd, path, bytes);
}

Status PowerLossFiles::write_at(int fd, const std::string& path, const void* buf, size_t len,
                                uint64_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  TEMPOKV_RETURN_IF_ERROR(enter("write", path));
  Write w{seq_, path, offset, read_range(path, offset, len)};
  TEMPOKV_RETURN_IF_ERROR(real_file_ops().write_at(fd, path, buf, len, offset));
  writes_.push_back(std::move(w));
  return Status::ok();
}

Status PowerLossFiles::sync_data(int fd, const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  TEMPOKV_RETURN_IF_ERROR(enter("fdatasync", path));
  const uint64_t upto = seq_;
  TEMPOKV_RETURN_IF_ERROR(real_file_ops().sync_data(fd, path));
  std::erase_if(writes_, [&](const Write& w) { return w.path == path && w.seq < upto; });
  return Status::ok();
}

Status PowerLossFiles::rename(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(mu_);
  TEMPOKV_RETURN_IF_ERROR(enter("rename", from));
  TEMPOKV_RETURN_IF_ERROR(real_file_ops().rename(from, to));
  names_.push_back({seq_, Kind::kRename, dir_of(from), from, to});
  for (Write& w : writes_) {
    if (w.path == from) w.path = to;  // the bytes move with the name
  }
  return Status::ok();
}

Status PowerLossFiles::unlink(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  TEMPOKV_RETURN_IF_ERROR(enter("unlink", path));
  const std::string stash = dir_of(path) + "/powerloss-stash-" + std::to_string(++stashes_);
  if (::link(path.c_str(), stash.c_str()) != 0) {
    return Status::from_errno(errno, "unlink " + path);  // ENOENT and the like, as unlink says
  }
  Status st = real_file_ops().unlink(path);
  if (!st.is_ok()) {
    ::unlink(stash.c_str());
    return st;
  }
  names_.push_back({seq_, Kind::kUnlink, dir_of(path), path, stash});
  return Status::ok();
}

Status PowerLossFiles::sync_dir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  TEMPOKV_RETURN_IF_ERROR(enter("fsync directory", dir));
  const uint64_t upto = seq_;
  TEMPOKV_RETURN_IF_ERROR(real_file_ops().sync_dir(dir));
  std::erase_if(names_, [&](const NameOp& op) {
    if (op.dir != dir || op.seq >= upto) return false;
    if (op.kind == Kind::kUnlink) ::unlink(op.b.c_str());  // gone for good
    return true;
  });
  return Status::ok();
}

Result<PowerLossFiles::CutReport> PowerLossFiles::power_cut() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!crashed_ && !(also_crashed_ && also_crashed_())) {
    return Status::failed_precondition("power_cut: crash() first");
  }
  CutReport report;
  // Names: an ordered prefix survives; the rest is undone newest first.
  const size_t keep = std::uniform_int_distribution<size_t>(0, names_.size())(rng_);
  report.names_kept = keep;
  for (size_t i = names_.size(); i-- > keep;) {
    const NameOp& op = names_[i];
    ++report.names_undone;
    switch (op.kind) {
      case Kind::kCreate:
        ::unlink(op.a.c_str());
        std::erase_if(writes_, [&](const Write& w) { return w.path == op.a; });
        break;
      case Kind::kRename:
        ::rename(op.b.c_str(), op.a.c_str());
        for (Write& w : writes_) {
          if (w.path == op.b) w.path = op.a;
        }
        break;
      case Kind::kUnlink:
        ::link(op.b.c_str(), op.a.c_str());
        ::unlink(op.b.c_str());
        break;
    }
  }
  for (size_t i = 0; i < keep; ++i) {
    if (names_[i].kind == Kind::kUnlink) ::unlink(names_[i].b.c_str());
  }
  names_.clear();
  // Bytes: page by page, kept, lost or torn (any sectors).
  for (const Write& w : writes_) {
    for (size_t page = 0; page < w.pre_image.size(); page += kBlockBytes) {
      const size_t n = std::min<size_t>(kBlockBytes, w.pre_image.size() - page);
      const uint64_t fate = rng_() % 3;
      if (fate == 0) continue;  // kept
      std::vector<std::byte> now = read_range(w.path, w.offset + page, n);
      if (now.empty()) continue;
      const size_t sectors = (n + kSector - 1) / kSector;
      uint64_t keep_mask = 0;  // torn: a non-empty proper subset of the sectors
      if (fate == 2 && sectors > 1) {
        const uint64_t all = sectors >= 64 ? ~0ULL : (1ULL << sectors) - 1;
        keep_mask = 1 + rng_() % (all - 1);
        ++report.pages_torn;
      } else {
        ++report.pages_lost;
      }
      for (size_t s = 0; s < sectors; ++s) {
        if (keep_mask & (1ULL << s)) continue;
        const size_t at = s * kSector, len = std::min(kSector, n - at);
        std::copy_n(w.pre_image.begin() + page + at, len, now.begin() + at);
      }
      write_range(w.path, w.offset + page, now.data(), n);
    }
  }
  writes_.clear();
  return report;
}

}  // namespace tempokv::store
