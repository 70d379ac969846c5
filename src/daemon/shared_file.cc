#include "daemon/shared_file.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace tempokv::service {

Result<int> create_shared_file(const std::string& path, std::optional<uint32_t> group) {
  // O_EXCL also refuses a symbolic link planted at the path.
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) {
    return Status::failed_precondition(
        "shared file " + path + " already exists and no earlier tempokvd on this data_dir made "
        "it; tempokvd never replaces a file it did not create: remove it or choose another "
        "tier.path / tier.dir");
  }
  if (fd < 0) return Status::from_errno(errno, "create " + path);
  if (group && (fchown(fd, static_cast<uid_t>(-1), *group) != 0 || fchmod(fd, 0660) != 0)) {
    const int err = errno;
    close(fd);
    unlink(path.c_str());
    return Status::from_errno(err, "give " + path + " to group " + std::to_string(*group) +
                                       " (server.group)");
  }
  return fd;
}

Status share_with_group(const std::string& path, uint32_t group) {
  if (chown(path.c_str(), static_cast<uid_t>(-1), group) != 0 || chmod(path.c_str(), 0660) != 0) {
    return Status::from_errno(errno, "give " + path + " to group " + std::to_string(group) +
                                         " (server.group)");
  }
  return Status::ok();
}

Result<uint32_t> lookup_group(const std::string& name) {
  if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) {
    return static_cast<uint32_t>(std::stoul(name));
  }
  struct group g{};
  struct group* found = nullptr;
  char buf[4096];
  if (getgrnam_r(name.c_str(), &g, buf, sizeof(buf), &found) != 0 || found == nullptr) {
    return Status::invalid_argument("server.group '" + name + "' is not a group of this system");
  }
  return static_cast<uint32_t>(found->gr_gid);
}

std::string shared_record_path(const std::string& data_dir) {
  return data_dir + "/tempokvd.shared";
}

namespace {

namespace fs = std::filesystem;

std::string mode_string(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// tempokvd-<16 hex digits>-tier, -writes or -keys: the names the daemon gives its shared files.
bool daemon_file_name(const std::string& name) {
  const std::string prefix = "tempokvd-";
  if (!name.starts_with(prefix) || name.size() < prefix.size() + 17) return false;
  for (size_t i = prefix.size(); i < prefix.size() + 16; ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  }
  const std::string rest = name.substr(prefix.size() + 16);
  return rest == "-tier" || rest == "-writes" || rest == "-keys";
}

// rt-<32 hex digits>: a runtime's write region (service_writes.cc).
bool region_file_name(const std::string& name) {
  if (name.size() != 35 || !name.starts_with("rt-")) return false;
  return std::all_of(name.begin() + 3, name.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

// Removes the regions in a dead daemon's write-region directory, then the directory; what it
// keeps (anything else in it), a line each.
std::vector<std::string> remove_write_regions(const std::string& dir) {
  std::vector<std::string> kept;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string path = entry.path().string();
    struct stat f {};
    if (!region_file_name(entry.path().filename().string()) || lstat(path.c_str(), &f) != 0 ||
        !S_ISREG(f.st_mode) || f.st_uid != geteuid()) {
      kept.push_back(path + " is not a write region of this user: kept");
      continue;
    }
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      kept.push_back(path + ": " + std::strerror(errno) + ": kept");
    }
  }
  if (ec) kept.push_back(dir + ": " + ec.message() + ": not listed");
  if (rmdir(dir.c_str()) != 0 && errno != ENOENT) {
    kept.push_back(dir + ": " + std::strerror(errno) + ": kept");
  }
  return kept;
}

}  // namespace

Status make_shared_dir(const std::string& path, std::optional<uint32_t> group) {
  if (mkdir(path.c_str(), 0700) != 0) {
    if (errno == EEXIST) {
      return Status::failed_precondition(
          "shared directory " + path + " already exists and no earlier tempokvd on this "
          "data_dir made it; tempokvd never takes over a directory it did not create: remove "
          "it or choose another tier.dir");
    }
    return Status::from_errno(errno, "create " + path);
  }
  // 0700 whatever the umask; with a group, 0710: its members may open a region whose name the
  // daemon gave them, never list the others.
  const bool ok = group ? chown(path.c_str(), static_cast<uid_t>(-1), *group) == 0 &&
                              chmod(path.c_str(), 0710) == 0
                        : chmod(path.c_str(), 0700) == 0;
  if (!ok) {
    const int err = errno;
    rmdir(path.c_str());
    return Status::from_errno(err, "give " + path + (group ? " to group " + std::to_string(*group) +
                                                                  " (server.group)"
                                                            : std::string(" mode 0700")));
  }
  return Status::ok();
}

bool SharedFilePlace::holds(const std::string& path) const {
  const fs::path p(path);
  // Exactly as the daemon writes it: absolute, no `.` or `..`, no doubled slash.
  if (path.empty() || path[0] != '/' || p.lexically_normal().string() != path) return false;
  if (!dir.empty()) {
    std::string d = fs::path(dir).lexically_normal().string();
    while (d.size() > 1 && d.ends_with('/')) d.pop_back();
    if (p.parent_path().string() != d) return false;
  }
  const std::string name = p.filename().string();
  return daemon_file_name(name) || (!tier_name.empty() && name == tier_name);
}

Result<std::vector<std::string>> remove_recorded_shared_files(const std::string& data_dir,
                                                              const SharedFilePlace& place) {
  std::vector<std::string> kept;
  const std::string record = shared_record_path(data_dir);
  const int fd = open(record.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return kept;  // no earlier daemon, or it stopped cleanly
  if (fd < 0) {
    if (errno != ELOOP) return Status::from_errno(errno, "open " + record);
    kept.push_back(record + " is a symbolic link: not read, nothing it names removed");
  } else {
    struct stat st {};
    const bool stat_ok = fstat(fd, &st) == 0;
    std::string text;
    if (stat_ok && S_ISREG(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 022) == 0) {
      char buf[4096];
      for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0 && text.size() < (1 << 20);) {
        text.append(buf, static_cast<size_t>(n));
      }
    } else {
      kept.push_back(record + " is not a regular file of this user that only it may write (mode " +
                     mode_string(st.st_mode) + ", owner " + std::to_string(st.st_uid) +
                     "): not read, nothing it names removed");
    }
    close(fd);
    size_t at = 0;
    while (at < text.size()) {
      size_t nl = text.find('\n', at);
      if (nl == std::string::npos) nl = text.size();
      const std::string path = text.substr(at, nl - at);
      at = nl + 1;
      if (path.empty()) continue;
      if (!place.holds(path)) {
        kept.push_back(path + " (named in " + record + ") is not a file tempokvd makes in " +
                       place.dir + ": kept");
        continue;
      }
      struct stat f {};
      if (lstat(path.c_str(), &f) != 0) {
        if (errno == ENOENT) continue;
        return Status::from_errno(errno, "stat " + path + " (named in " + record + ")");
      }
      if (S_ISDIR(f.st_mode) && f.st_uid == geteuid() && path.ends_with("-writes")) {
        // The write regions' directory: the runtimes' regions in it, then itself.
        for (const std::string& line : remove_write_regions(path)) kept.push_back(line);
        continue;
      }
      if (!S_ISREG(f.st_mode) || f.st_uid != geteuid()) {
        kept.push_back(path + " (named in " + record +
                       ") is not a regular file of this user: kept");
        continue;
      }
      if (unlink(path.c_str()) != 0 && errno != ENOENT) {
        return Status::from_errno(
            errno, "remove " + path + " (made by an earlier tempokvd, named in " + record + ")");
      }
    }
  }
  if (unlink(record.c_str()) != 0 && errno != ENOENT) {
    return Status::from_errno(errno, "remove " + record);
  }
  return kept;
}

Status record_shared_files(const std::string& data_dir, const std::vector<std::string>& paths) {
  const std::string record = shared_record_path(data_dir);
  for (const std::string& p : paths) {
    struct stat st {};
    if (lstat(p.c_str(), &st) == 0) {
      // Not an earlier daemon's of this data_dir (those were just removed): never the daemon's.
      return Status::failed_precondition(
          "shared file " + p + " already exists and no earlier tempokvd on this data_dir made "
          "it; tempokvd never replaces a file it did not create: remove it or choose another "
          "tier.path / tier.dir");
    }
  }
  const std::string tmp = record + ".tmp";
  std::string text;
  for (const std::string& p : paths) text += p + "\n";
  // Made fresh (a stale one in the daemon's own directory is its own) and 0600 whatever the umask.
  if (unlink(tmp.c_str()) != 0 && errno != ENOENT) {
    return Status::from_errno(errno, "remove " + tmp);
  }
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::from_errno(errno, "create " + tmp);
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int err = errno;
  close(fd);
  if (!written) return Status::from_errno(err, "write " + tmp);
  if (rename(tmp.c_str(), record.c_str()) != 0) {
    return Status::from_errno(errno, "rename " + tmp + " to " + record);
  }
  return Status::ok();
}

Result<std::string> resolve_dax_device(const std::string& path) {
  const std::string field = "tier.path " + path;
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) {
    if (errno == ENOENT) {
      return Status::not_found(field + " does not exist; tempokvd never creates a dax device");
    }
    return Status::from_errno(errno, "resolve " + field);
  }
  const fs::path real(resolved);
  if (real.parent_path() != "/dev" || !real.filename().string().starts_with("dax")) {
    return Status::invalid_argument(field + " resolves to " + real.string() +
                                    ", not a /dev/dax* device");
  }
  struct stat st {};
  if (stat(resolved, &st) != 0) return Status::from_errno(errno, "stat " + real.string());
  if (!S_ISCHR(st.st_mode)) {
    return Status::invalid_argument(field + " (" + real.string() +
                                    ") is not a character device");
  }
  return real.string();
}

}  // namespace tempokv::service
