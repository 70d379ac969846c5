// The posix path: what a naive disk backend does. Buffered pread through the page cache into a
// plain (pageable) host buffer, then a device copy of that buffer. The kernel's copy out of the
// page cache is a CPU copy of every byte; with CUDA the driver adds another one (it stages
// pageable memory through its own pinned buffer).
#include "transfer/staged_restore_path.h"

namespace tempokv {

std::unique_ptr<RestorePath> make_posix_restore_path(Executor& executor, SsdEngine& ssd,
                                                     TransferEngine& transfer,
                                                     const RestorePathOptions& options) {
  StagingConfig config;
  config.name = "posix";
  config.o_direct = false;
  config.count_buffered_read = true;
  return std::make_unique<StagedRestorePath>(std::move(config), executor, ssd, transfer, options);
}

}  // namespace tempokv
