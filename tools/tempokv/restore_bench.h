// restore-bench: seed 000's Table 1 on this machine. Writes unique sessions into a store, then
// restores each once per path after dropping it from every cache, and reports per path the
// median and p95 restore time, the disk read rate (block device counters), the delivery rate
// into the destination, CPU core-seconds per request, CPU-copied bytes per restored byte, peak
// resident memory, and whether every byte verified against its stored checksum.
//
// Method in docs/restore-bench.md. Runs on the calling thread (it drives the RealExecutor).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fio_ceiling.h"
#include "tempokv/status.h"

namespace tempokv::cli {

struct RestoreBenchConfig {
  std::string dir = "/var/tmp/tempokv-restore-bench";  // store directory (on the drive to test)
  uint32_t sessions = 8;            // unique sessions written and restored (per chunking)
  std::string model = "qwen3-coder-30b-a3b";
  uint64_t tokens = 8192;           // tokens per session (when session_bytes is 0)
  uint64_t session_bytes = 0;       // overrides tokens: tokens = session_bytes / bytes per token
  uint32_t chunk_tokens = 256;      // tokens per stored chunk object (seed: 256 for O_DIRECT)
  uint32_t gds_chunk_tokens = 1024;  // chunk tokens for the gds path (seed: 1024)
  std::vector<std::string> paths = {"posix", "odirect-bounce", "direct", "gds"};
  uint32_t depth = 0;               // direct/gds: requests in flight; 0: the path's own
  uint32_t baseline_depth = 1;      // posix/odirect-bounce: chunks in flight (naive backend)
  bool equal_depth = false;         // also run posix/odirect-bounce at `depth` ("posix@8" rows)
  // Cap on one read request (a staging slot); 0: the path's own (default_restore_options).
  uint64_t max_request_bytes = 0;
  // The smallest read of the taper at a session's end (piece_bytes); unset: the path's own
  // (direct 512 KiB, the others none), 0: no taper.
  std::optional<uint64_t> tail_piece_bytes;
  std::string transfer = "auto";    // transfer engine: auto, emulated, cuda
  int cuda_device = 0;
  uint32_t warmup = 1;              // unmeasured restores per path first (page tables, caches)
  bool compare_fio = false;
  bool keep = false;                // keep the store directory afterwards
  bool reuse = false;               // reuse sessions already in --dir (same parameters)
  std::string json_path;

  Status validate() const;
};

struct RestoreBenchRow {
  std::string path;
  bool available = false;
  std::string unavailable_reason;
  std::string detail;
  uint32_t chunk_tokens = 0;
  uint64_t session_bytes = 0;
  uint64_t request_bytes = 0;
  uint32_t depth = 0;
  uint32_t restores = 0;
  double restore_ms_median = 0, restore_ms_p95 = 0;
  double disk_read_gbps = 0;       // median over restores, from the block device's counters
  double delivery_gbps = 0;        // payload bytes / restore time, median
  double cpu_core_s_per_req = 0;   // all threads, user + system, median
  double cpu_core_s_per_req_excl_emulated_dma = 0;  // minus the emulated device copy's thread
  double cpu_copy_bytes_per_byte = 0;               // host-side CPU copies / payload bytes
  double emulated_device_copy_bytes_per_byte = 0;   // emulated DMA copies / payload bytes
  std::optional<double> fio_ratio;                   // disk_read_gbps / fio_gbps (fio's best)
  std::optional<double> fio_equal_depth_ratio;       // disk_read_gbps / fio_equal_depth_gbps
  // fio over each restored session's reads, run beside its restore (fio_ceiling.h): medians over
  // the pairs of fio's best rate and of its rate at this path's depth; the ratios above are the
  // medians of the pairs' ratios.
  std::optional<double> fio_gbps, fio_equal_depth_gbps;
  uint32_t fio_best_depth = 0;
  uint32_t fio_pairs = 0;
  std::vector<FioDepthRun> fio_first_runs;  // the first pair's fio runs, the path's depth first
  uint64_t peak_rss_bytes = 0;
  // Stages, medians over restores (restore_measure.h): reads in flight on average, and per piece
  // the mean read and device copy times.
  double mean_read_depth = 0, read_ms_mean = 0, copy_ms_mean = 0, tail_ms = 0;
  double path_ms_median = 0;  // the path's own window, without resolving and the hand-back
  bool verified = false;
  std::string error;                                 // first failure, if any restore failed
  std::string device;                                // "cuda:<name>" or "emulated"
};

struct RestoreBenchResult {
  // The direct path's fio figures (or the first path compared when direct did not run): fio's
  // best over depths {the path's, 8, 16, 32} and its rate at the path's depth (row fields).
  std::optional<double> fio_gbps;
  std::optional<double> fio_equal_depth_gbps;
  uint32_t fio_best_depth = 0;
  std::string fio_note;  // why fio did not run, or its parameters
  std::string block_device;
  uint64_t bytes_per_token = 0;
  uint64_t tokens = 0;
  std::vector<RestoreBenchRow> rows;
};

Result<RestoreBenchResult> run_restore_bench(const RestoreBenchConfig& config);

}  // namespace tempokv::cli
