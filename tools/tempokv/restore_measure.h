// One restore of one session by one path, measured: the timed window runs from resolving the
// session's descriptors (lookup + pin) to the completion callback; CPU time, block device
// counters and copy counters are read at its two ends. Verification runs after the window.
// Runs on the Executor's thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "executor/real_executor.h"
#include "store/store.h"
#include "transfer/restore_path.h"

namespace tempokv::cli {

struct RestoreSample {
  Status status;
  double ms = 0;
  uint64_t payload_bytes = 0;
  uint64_t disk_read_bytes = 0;   // from the block device's counters (0 when unknown)
  // What the path itself asked the drive for (RestoreStats::read_bytes; 0 for gds): unlike the
  // device's counters, not swollen by other processes reading the same drive.
  uint64_t path_read_bytes = 0;
  double cpu_s = 0;               // all threads
  double emulated_dma_cpu_s = 0;  // the emulated device copy's thread
  uint64_t host_copy_bytes = 0;
  uint64_t emulated_copy_bytes = 0;
  // Stages (staged paths): reads in flight on average, and per piece the mean read (issue to its
  // callback on the Executor) and device copy times.
  double path_ms = 0;  // the path's own window: restore() (files opened) to the callback posted
  double mean_read_depth = 0;
  double read_ms_mean = 0;
  double copy_ms_mean = 0;
  double tail_ms = 0;  // the last read's completion to the callback
  bool verified = false;
};

struct RestoreRig {
  RealExecutor& executor;
  Store& store;
  TransferEngine& transfer;
  std::string block_device;  // empty: no disk counters
};

// Drops the session's segment files from the page cache, restores, verifies.
RestoreSample measure_restore(RestoreRig& rig, RestorePath& path, const std::vector<Key>& keys,
                              DeviceBuffer& dst);

// Forgets the process's peak resident set (so the next reading is this path's), and reads it.
void reset_peak_rss();
uint64_t read_peak_rss_bytes();

}  // namespace tempokv::cli
