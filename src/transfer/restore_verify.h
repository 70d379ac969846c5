// verify_restored: checks every chunk a restore landed against the XXH3-128 checksum the store
// recorded for it. Blocking; CUDA memory is copied back to host through a scratch buffer first,
// so call it outside timed windows. Thread safety: any thread, buffers not being written.
#pragma once

#include "tempokv/status.h"
#include "transfer/device_buffer.h"
#include "transfer/restore_session.h"
#include "transfer/transfer_engine.h"

namespace tempokv {

// OK when every extent matches; Corruption naming the first chunk that does not.
Status verify_restored(const RestoreSession& session, const DeviceBuffer& dst,
                       TransferEngine& transfer);

}  // namespace tempokv
