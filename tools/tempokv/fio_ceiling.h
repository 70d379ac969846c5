// fio as the ceiling of the benches (restore-bench, store bench): fio reads the same payloads a
// path read (same files, offsets and request sizes) with io_uring, O_DIRECT, registered buffers and
// files, as sequential streams that skip the record headers, at the path's queue depth and at
// depths 8, 16 and 32; the best of these is the ceiling, the first the equal-depth reference. The
// benches run it right beside each measured read (alternating which goes first), so that the drift
// of a shared drive hits both alike and the ratios are taken pair by pair. Blocking.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fio.h"
#include "tempokv/status.h"

namespace tempokv::cli {

struct FioCompareOptions {
  // Reads of another shape than sequential streams (slots smaller than a chunk) are replayed from
  // an I/O log at depth 1, a lower bound of the drive's rate (fio 3.33 drops the requests in
  // flight at the end of a replay at depth > 1, fio.h); without it they are FailedPrecondition.
  bool allow_replay = true;
  bool huge_pages = true;  // FioJob::huge_pages: as the compared path's buffers are
};

// Read rate in GB/s (1e9 bytes per second); *note gets the command used. InternalError when fio
// did not read exactly the reads' bytes.
Result<double> run_fio_same_reads(const std::vector<FioReadExtent>& reads, uint32_t depth,
                                  std::string* note, const FioCompareOptions& options = {});

// One fio run over the compared reads.
struct FioDepthRun {
  uint32_t depth = 0;
  double gbps = 0;          // fio's read rate, 1e9 bytes per second
  uint64_t read_bytes = 0;  // what fio says it read: the compared reads' bytes
  std::string command;      // its command line
  double depth_share = 0;   // share of fio's I/Os submitted with `depth` in flight (its bucket)
};
nlohmann::json fio_runs_json(const std::vector<FioDepthRun>& runs);

struct FioCeiling {
  double equal_depth_gbps = 0;  // at the path's depth
  double best_gbps = 0;         // the best over the path's depth, 8, 16 and 32
  uint32_t best_depth = 0;
  std::string command;          // the equal-depth run's command line
  std::string rates;            // "depth 4: 1.31 GB/s, depth 8: ..." for reports
  std::vector<FioDepthRun> runs;  // every run, the path's depth first
};

// fio over `reads` at `depth` and at 8, 16 and 32 (each run after dropping the files from the page
// cache). A replayed shape (see above) runs once, at depth 1.
Result<FioCeiling> run_fio_ceiling(const std::vector<FioReadExtent>& reads, uint32_t depth,
                                   const FioCompareOptions& options = {});

// The ceiling of runs (not empty): the first is the equal-depth reference, the fastest the best
// (the earlier of equally fast runs).
FioCeiling fio_ceiling_of(std::vector<FioDepthRun> runs);

// Pairs of a measured rate and the ceiling measured beside it, and their medians.
struct FioPairs {
  std::vector<double> rates, best, equal_depth;
  std::vector<uint32_t> best_depths;
  void add(double rate, const FioCeiling& c);
  bool empty() const { return rates.empty(); }
  double ratio_vs_best() const;         // median over pairs of rate / best
  double ratio_vs_equal_depth() const;  // median over pairs of rate / equal depth
  double best_gbps() const;             // median of the pairs' ceilings
  double equal_depth_gbps() const;
  uint32_t best_depth() const;          // the depth that was best most often
};

}  // namespace tempokv::cli
