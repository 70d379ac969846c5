#include "restore_fio.h"

#include <unistd.h>

namespace tempokv::cli {

Result<double> run_fio_replay(const std::vector<FioReadExtent>& reads, uint64_t request_bytes,
                              uint32_t depth, std::string* note) {
  if (reads.empty()) return Status::invalid_argument("fio: no reads to replay");
  std::string log = "/tmp/tempokv-restore-fio-" + std::to_string(getpid()) + ".iolog";
  TEMPOKV_RETURN_IF_ERROR(write_fio_read_log(log, reads));
  FioJob job;
  job.name = "restore-replay";
  job.ioengine = "io_uring";
  job.direct = true;
  job.block_bytes = request_bytes;  // sizes the buffers; the log gives each request's size
  job.iodepth = depth;
  job.read_iolog = log;
  // Registered buffers, as the direct path uses: without them the kernel pins the pages of
  // every request and fio is slower, which would flatter the ratio.
  job.extra_args = {"--fixedbufs=1", "--thread=1"};
  Result<FioResult> r = run_fio(job);
  unlink(log.c_str());
  if (!r.is_ok()) return r.status();
  if (r->read_bytes_per_s <= 0) return Status::internal("fio read nothing");
  if (note) *note = r->command;
  return r->read_bytes_per_s / 1e9;
}

}  // namespace tempokv::cli
