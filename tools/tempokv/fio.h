// A small fio runner for the benchmarks (store bench, restore-bench): builds the command line from
// a FioJob, runs fio as a child process with --output-format=json, and parses the totals of every
// job with nlohmann::json. Also writes fio "version 2" I/O logs, so fio can replay exactly the
// extents a benchmark read (same files, offsets and request sizes).
//
// Blocking; thread-compatible. Unavailable when fio is not installed; IOError when fio fails (the
// message carries the end of its output).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tempokv/status.h"

namespace tempokv::cli {

struct FioJob {
  std::string name = "tempokv";
  std::vector<std::string> filenames;  // passed as --filename=a:b:c (fio splits I/O over them)
  std::string rw = "read";             // read, randread, write, ...
  std::string ioengine = "io_uring";
  bool direct = true;                  // O_DIRECT
  uint64_t block_bytes = 4096;         // --bs (one request)
  uint32_t iodepth = 1;
  uint64_t offset_bytes = 0;  // --offset, when non-zero
  uint64_t size_bytes = 0;    // --size per file, when non-zero
  std::string read_iolog;     // when set: replay this I/O log instead of generating I/O
  std::vector<std::string> extra_args;  // appended verbatim, e.g. "--numjobs=2"
  // fio's buffers on transparent huge pages (glibc.malloc.hugetlb=1 in its environment), as the
  // benches' own read buffers are: on 4 KiB pages a large read splits into as many device
  // requests as the queue's max_segments allows (~1 MiB on virtio), on 2 MiB pages into
  // max_sectors_kb ones, which is faster. Off: fio's default pages.
  bool huge_pages = true;

  // When not empty: one fio job per range (its own file, offset and size, the options above
  // shared), run one after another (stonewall); filenames/offset/size above are then unused.
  struct Range {
    std::string path;
    uint64_t offset_bytes = 0;
    uint64_t size_bytes = 0;
    uint64_t block_bytes = 0;  // this job's --bs; 0: block_bytes above
    // Records read in several requests each (a chunk larger than the request size): fio reads
    // zone_bytes (a record's payload) and skips zone_skip_bytes (the next record's header), in
    // one stream at the job's depth (--rw=read --zonemode=strided), io_bytes in all. 0: unused.
    uint64_t zone_bytes = 0;
    uint64_t zone_skip_bytes = 0;
    uint64_t io_bytes = 0;
  };
  std::vector<Range> ranges;
};

struct FioResult {
  uint64_t read_bytes = 0;
  uint64_t read_ios = 0;
  // fio's bandwidth: bw_bytes summed over concurrent jobs; for FioJob::ranges (jobs run one after
  // another) the bytes of all jobs over their summed runtime.
  double read_bytes_per_s = 0;
  double read_runtime_s = 0;    // the longest job's read runtime (the sum for FioJob::ranges)
  double read_lat_mean_us = 0;  // completion latency mean of the first job
  // fio's iodepth_level: the share (0 to 1) of I/Os submitted with a bucket's count in flight,
  // by the bucket's lower bound (1, 2, 4, 8, 16, 32, 64), weighted by I/Os over the jobs.
  std::map<uint32_t, double> depth_shares;
  // The share of I/Os submitted with at least `depth` in flight (fio's bucket holding it).
  double share_at_depth(uint32_t depth) const;
  uint64_t write_bytes = 0;
  double write_bytes_per_s = 0;
  std::string command;  // the command line, for reports
};

Result<FioResult> run_fio(const FioJob& job);
// The totals of fio's --output-format=json text (notes before the document are skipped).
// sequential_jobs: the jobs ran one after another (FioJob::ranges), so the read rate is all bytes
// over the summed runtime; otherwise the jobs ran together and their bandwidths add up.
Result<FioResult> parse_fio_output(const std::string& text, bool sequential_jobs);

// One read for a replay log.
struct FioReadExtent {
  std::string path;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};
// A fio job that reads exactly `reads` as sequential streams at `depth`, with registered buffers
// and files as the benches' own reads use. Reads back to back in one file (the pieces of a record
// read in several requests: a chunk larger than the request size) are one record, which fio
// reads in as few equal requests of whole 4 KiB blocks as it can, no more than twice the path's
// count (16 + 8 MiB become 2 x 12 MiB). Records of one size, each `gap_bytes` after the last (a
// store record's header between them), make one run, read by one fio job at `depth`: with
// read:<gap> when one request reads a record, else as a strided stream (a zone per record), so
// the depth holds across the pieces of a record as across records. Runs (another file, size or
// spacing, such as a session's short final chunk) are jobs run one after another.
// FailedPrecondition when the reads would need more than 256 jobs, or a record splits into no
// equal requests.
Result<FioJob> fio_job_for_extents(std::vector<FioReadExtent> reads, uint64_t gap_bytes,
                                   uint32_t depth);

// Writes a fio iolog (version 2) that opens each file, reads the extents in the given order and
// closes the files. Replay it with FioJob::read_iolog. Caution: fio 3.33 does not count the
// requests still in flight when a replay at iodepth > 1 ends, so use it for access patterns, not
// for rates at depth.
Status write_fio_read_log(const std::string& log_path, const std::vector<FioReadExtent>& reads);

}  // namespace tempokv::cli
