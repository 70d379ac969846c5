// CudaTransferEngine: device memory from cudaMalloc, copies with cudaMemcpyAsync on one
// non-blocking stream, each followed by an event; a completion thread waits on the events in issue
// order (blocking-sync events, so it sleeps rather than spins) and posts the callbacks.
//
// A copy from pageable memory makes the driver stage the bytes through its own pinned buffer
// with a CPU copy; those bytes are counted as host-side CPU copies. Copies from memory registered
// with register_host (cudaHostRegister) are DMA'd by the GPU and cost no CPU copy.
//
// Built only with TEMPOKV_HAVE_CUDA. Thread safety: as TransferEngine.
#pragma once

#include <memory>

#include "transfer/transfer_engine.h"

namespace tempokv {

// The engine, or Unavailable naming why (no device, driver error).
Result<std::unique_ptr<TransferEngine>> make_cuda_transfer_engine(
    Executor& executor, const TransferEngineOptions& options);
Status cuda_probe(int device);

}  // namespace tempokv
