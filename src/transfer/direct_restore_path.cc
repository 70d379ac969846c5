// The direct path: io_uring O_DIRECT reads land in staging slots that are at once io_uring fixed
// buffers (SsdEngine::register_buffer: no per-request page pinning in the kernel) and pinned
// memory the device copy reads (cudaHostRegister: the GPU DMAs them, no CPU copy). `depth` reads
// stay in flight, with spare slots for the pieces being copied, so the SSD reads of later pieces
// overlap the device copies of earlier ones and the restore runs at the drive's rate. No CPU copy on the host side; on a CPU-only machine the
// emulated device copy is the only copy.
#include "transfer/staged_restore_path.h"

namespace tempokv {

std::unique_ptr<RestorePath> make_direct_restore_path(Executor& executor, SsdEngine& ssd,
                                                      TransferEngine& transfer,
                                                      const RestorePathOptions& options) {
  StagingConfig config;
  config.name = "direct";
  config.o_direct = true;
  config.register_with_ssd = true;
  config.pin_for_device = true;
  config.spare_copy_slots = true;
  return std::make_unique<StagedRestorePath>(std::move(config), executor, ssd, transfer, options);
}

}  // namespace tempokv
