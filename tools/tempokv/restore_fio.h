// The fio baseline of restore-bench, through the shared fio runner (fio.h): fio replays exactly
// the reads a restore path made (same files, offsets and request sizes, from a version 2 I/O log)
// with io_uring, O_DIRECT, registered buffers and the path's queue depth. Blocking.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fio.h"
#include "tempokv/status.h"

namespace tempokv::cli {

// Read rate in GB/s (1e9 bytes per second); *note gets the command used.
Result<double> run_fio_replay(const std::vector<FioReadExtent>& reads, uint64_t request_bytes,
                              uint32_t depth, std::string* note);

}  // namespace tempokv::cli
