#include "common/resource_usage.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

namespace tempokv {

double process_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) { return double(tv.tv_sec) + double(tv.tv_usec) / 1e6; };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

uint64_t peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;
}

Result<std::string> block_device_of(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return Status::from_errno(errno, "stat " + path);
  namespace fs = std::filesystem;
  std::string dev = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  std::error_code ec;
  fs::path link = fs::canonical("/sys/dev/block/" + dev, ec);
  if (ec) {
    return Status::not_found("no block device for " + path + " (device " + dev +
                             " is not in /sys/dev/block; tmpfs or overlay?)");
  }
  // A partition's directory sits inside its disk's; the counters of either work, but the disk's
  // include every partition, so report the partition itself when it has a stat file.
  if (fs::exists(link / "stat")) {
    // device-mapper and md devices have their own counters too.
    return link.filename().string();
  }
  return Status::not_found("block device " + link.string() + " has no stat file");
}

Result<BlockCounters> read_block_counters(const std::string& device) {
  std::ifstream in("/sys/class/block/" + device + "/stat");
  if (!in) return Status::not_found("no counters for block device '" + device + "'");
  // Fields: read I/Os, read merges, read sectors, read ticks, write I/Os, write merges,
  // write sectors, ... (Documentation/block/stat.rst); sectors are 512 bytes.
  uint64_t f[7] = {};
  for (auto& v : f) in >> v;
  if (!in) return Status::corruption("cannot parse /sys/class/block/" + device + "/stat");
  return BlockCounters{f[2] * 512, f[6] * 512, f[0]};
}

Status drop_page_cache(const std::string& file) {
  int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::from_errno(errno, "open " + file);
  fdatasync(fd);
  int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  if (rc != 0) return Status::from_errno(rc, "posix_fadvise DONTNEED " + file);
  return Status::ok();
}

}  // namespace tempokv
