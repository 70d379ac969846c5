// TransferEngine: the seam for host -> device copies (DESIGN.md §1).
//
// Owns the device side: allocates DeviceBuffers and copies host memory into them asynchronously;
// every completion is post()ed to the Executor given at construction (simulated: scheduled as an
// Executor timer), so control-plane code sees completions on its own thread.
//
// Implementations (make_transfer_engine): kEmulated, a copy worker thread memcpy()ing into host
// memory that stands in for the device; kCuda, cudaMemcpyAsync on a stream with events (built
// only when CMake finds CUDA); kSimulated, a rate model with exact times and no bytes.
//
// Contract:
// * copy_to_device(src, dst, dst_offset, bytes, cb): [dst_offset, dst_offset + bytes) must lie in
//   dst (else InvalidArgument); src must stay valid and unchanged until cb runs. Copies complete
//   in the order they were issued.
// * register_host() declares a host buffer that many copies will read (cudaHostRegister: the DMA
//   engine reads it directly; emulated: mlock, so it is pinned like the real thing). Optional.
// * copy_to_host() is blocking and meant for verification outside timed windows.
// * Thread safety: copy_to_device, register_host, unregister_host and stats are thread-safe. The
//   engine must outlive every DeviceBuffer it allocated and every callback it will post;
//   destroying it waits for copies in flight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "tempokv/executor.h"
#include "tempokv/status.h"
#include "transfer/copy_counters.h"
#include "transfer/device_buffer.h"

namespace tempokv {

using CopyCallback = std::function<void(Status)>;

struct TransferStats {
  uint64_t copies = 0;
  uint64_t bytes = 0;
  uint64_t errors = 0;
  uint64_t in_flight = 0;
  CopyCountersSnapshot cpu_copies;  // bytes the CPU copied on behalf of this engine
};

enum class TransferEngineKind {
  kAuto,       // CUDA when a GPU is usable, else emulated
  kEmulated,   // host memory stands in for the device; a worker thread copies
  kCuda,       // cudaMalloc'd destination, cudaMemcpyAsync
  kSimulated,  // rate model, no bytes
};

struct TransferEngineOptions {
  TransferEngineKind kind = TransferEngineKind::kAuto;
  int cuda_device = 0;           // CUDA device ordinal
  bool pin_with_mlock = true;    // emulated: mlock registered host buffers (pinned memory)
  // Emulated: the rate of the host -> device link it stands in for. Copies still move every byte
  // with memcpy, one after another, but none completes before the link could have carried it
  // (0: as fast as memcpy). Real-mode evaluation sets the cost profile's retrieval rate, as the
  // GPU's compute is emulated by the profile too.
  double emulated_link_bytes_per_s = 0;
  // Simulated engine: copies run one after another on one link; each takes the latency, then its
  // bytes at the bandwidth.
  Duration sim_copy_latency = std::chrono::microseconds(10);
  double sim_bytes_per_s = 25.0e9;  // about PCIe 5.0 x16 host -> device in practice

  Status validate() const;
};

class TransferEngine {
 public:
  virtual ~TransferEngine() = default;

  virtual std::string_view name() const = 0;
  virtual DeviceKind device_kind() const = 0;
  // "emulated", "simulated" or "cuda:<device name>".
  virtual std::string device_description() const = 0;

  virtual Result<std::unique_ptr<DeviceBuffer>> allocate(size_t bytes) = 0;
  virtual Status register_host(void* base, size_t bytes) = 0;
  virtual void unregister_host(void* base) = 0;

  virtual void copy_to_device(const void* src, DeviceBuffer& dst, uint64_t dst_offset,
                              size_t bytes, CopyCallback cb) = 0;
  virtual Status copy_to_host(const DeviceBuffer& src, uint64_t src_offset, void* dst,
                              size_t bytes) = 0;

  virtual TransferStats stats() const = 0;
  // CPU seconds spent doing what a GPU's DMA engine would do (the emulated engine's copy worker);
  // 0 for engines whose copies cost the host no CPU.
  virtual double emulated_dma_cpu_seconds() const { return 0; }
};

Result<std::unique_ptr<TransferEngine>> make_transfer_engine(Executor& executor,
                                                             const TransferEngineOptions& options);
Result<TransferEngineKind> parse_transfer_engine_kind(std::string_view name);

// True when this build has CUDA and at least one device answers; the reason otherwise.
Status cuda_usable();

// Checks that [offset, offset + bytes) lies inside buffer; InvalidArgument naming what was wrong.
Status check_device_range(const DeviceBuffer& buffer, uint64_t offset, size_t bytes);

}  // namespace tempokv
