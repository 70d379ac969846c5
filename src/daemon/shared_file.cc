#include "daemon/shared_file.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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

Status remove_recorded_shared_files(const std::string& data_dir) {
  const std::string record = shared_record_path(data_dir);
  std::ifstream in(record);
  if (!in) return Status::ok();  // no earlier daemon, or it stopped cleanly
  for (std::string path; std::getline(in, path);) {
    if (path.empty()) continue;
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return Status::from_errno(
          errno, "remove " + path + " (made by an earlier tempokvd, named in " + record + ")");
    }
  }
  if (unlink(record.c_str()) != 0 && errno != ENOENT) {
    return Status::from_errno(errno, "remove " + record);
  }
  return Status::ok();
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
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const std::string& p : paths) out << p << '\n';
    out.flush();
    if (!out) return Status::io_error("write " + tmp);
  }
  if (rename(tmp.c_str(), record.c_str()) != 0) {
    return Status::from_errno(errno, "rename " + tmp + " to " + record);
  }
  return Status::ok();
}

}  // namespace tempokv::service
