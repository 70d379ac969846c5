// Measurements of the process and the machine for benchmarks: CPU time of all threads, peak
// resident memory, the block device counters of the device holding a path, and dropping a file
// from the page cache. Plain functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "tempokv/status.h"

namespace tempokv {

// User + system CPU seconds of every thread of this process so far (getrusage RUSAGE_SELF).
double process_cpu_seconds();
// Peak resident set size of this process in bytes (ru_maxrss).
uint64_t peak_rss_bytes();

// Sectors read/written as the kernel counts them for one block device (/sys/class/block/X/stat).
struct BlockCounters {
  uint64_t read_bytes = 0;
  uint64_t write_bytes = 0;
  uint64_t read_ios = 0;
};
// The block device that holds `path` (resolves partitions and device-mapper to the disk whose
// counters /sys exposes). Its name, e.g. "vda" or "nvme0n1".
Result<std::string> block_device_of(const std::string& path);
Result<BlockCounters> read_block_counters(const std::string& device);

// Asks the kernel to drop the page cache of a file (fdatasync + POSIX_FADV_DONTNEED).
Status drop_page_cache(const std::string& file);

}  // namespace tempokv
