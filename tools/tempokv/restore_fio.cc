#include "restore_fio.h"

#include <unistd.h>

#include "common/units.h"

namespace tempokv::cli {

Result<double> run_fio_same_reads(const std::vector<FioReadExtent>& reads, uint32_t depth,
                                  std::string* note) {
  // Sequential streams over the same payloads when the reads have that shape (whole chunks of one
  // size, back to back in the store); otherwise a replay of the exact reads.
  Result<FioJob> job = fio_job_for_extents(reads, kBlockBytes, depth);
  std::string log;
  if (!job.is_ok()) {
    log = "/tmp/tempokv-restore-fio-" + std::to_string(getpid()) + ".iolog";
    TEMPOKV_RETURN_IF_ERROR(write_fio_read_log(log, reads));
    FioJob replay;
    replay.name = "restore-replay";
    replay.block_bytes = reads.front().bytes;  // sizes the buffers; the log sizes each request
    // fio 3.33 drops the requests in flight at the end of a replay at depth > 1 (fio.h): replay
    // at depth 1, a lower bound of the drive's rate.
    replay.iodepth = 1;
    replay.read_iolog = log;
    replay.extra_args = {"--fixedbufs=1", "--thread=1"};
    job = replay;
  }
  job->name = job->read_iolog.empty() ? "restore-same-extents" : job->name;
  Result<FioResult> r = run_fio(*job);
  if (!log.empty()) unlink(log.c_str());
  if (!r.is_ok()) return r.status();
  if (r->read_bytes_per_s <= 0) return Status::internal("fio read nothing");
  if (note) *note = r->command;
  return r->read_bytes_per_s / 1e9;
}

}  // namespace tempokv::cli
