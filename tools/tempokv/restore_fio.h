// The fio baseline of restore-bench, through the shared fio runner (fio.h): fio reads the same
// payloads a restore path read (same files, offsets and request sizes) with io_uring, O_DIRECT,
// registered buffers and the path's queue depth, as sequential streams that skip the record
// headers; reads of another shape are replayed from an I/O log at depth 1. Blocking.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fio.h"
#include "tempokv/status.h"

namespace tempokv::cli {

// Read rate in GB/s (1e9 bytes per second); *note gets the command used.
Result<double> run_fio_same_reads(const std::vector<FioReadExtent>& reads, uint32_t depth,
                                  std::string* note);

}  // namespace tempokv::cli
