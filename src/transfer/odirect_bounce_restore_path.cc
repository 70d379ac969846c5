// The odirect-bounce path: the seed's O_DIRECT path. Reads bypass the page cache into a bounce
// buffer, the CPU copies each chunk into a pinned buffer (LMCache's staging), and the device copy
// reads the pinned buffer. One CPU copy of every byte on the host.
#include "transfer/staged_restore_path.h"

namespace tempokv {

std::unique_ptr<RestorePath> make_odirect_bounce_restore_path(Executor& executor, SsdEngine& ssd,
                                                              TransferEngine& transfer,
                                                              const RestorePathOptions& options) {
  StagingConfig config;
  config.name = "odirect-bounce";
  config.o_direct = true;
  config.bounce = true;
  config.pin_for_device = true;
  return std::make_unique<StagedRestorePath>(std::move(config), executor, ssd, transfer, options);
}

}  // namespace tempokv
