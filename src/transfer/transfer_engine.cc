#include "transfer/transfer_engine.h"

#include "transfer/emulated_transfer_engine.h"
#include "transfer/sim_transfer_engine.h"
#if TEMPOKV_HAVE_CUDA
#include "transfer/cuda_transfer_engine.h"
#endif

namespace tempokv {

std::string_view device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kEmulated: return "emulated";
    case DeviceKind::kCuda: return "cuda";
    case DeviceKind::kSimulated: return "simulated";
  }
  return "unknown";
}

Status TransferEngineOptions::validate() const {
  if (sim_bytes_per_s <= 0) {
    return Status::invalid_argument("TransferEngineOptions.sim_bytes_per_s must be positive");
  }
  if (sim_copy_latency < Duration::zero()) {
    return Status::invalid_argument("TransferEngineOptions.sim_copy_latency must not be negative");
  }
  if (!(emulated_link_bytes_per_s >= 0)) {
    return Status::invalid_argument(
        "TransferEngineOptions.emulated_link_bytes_per_s must not be negative (0: unpaced)");
  }
  if (cuda_device < 0) {
    return Status::invalid_argument("TransferEngineOptions.cuda_device must not be negative");
  }
  return Status::ok();
}

Status check_device_range(const DeviceBuffer& buffer, uint64_t offset, size_t bytes) {
  if (offset > buffer.size() || bytes > buffer.size() - offset) {
    return Status::invalid_argument("device range [" + std::to_string(offset) + ", " +
                                    std::to_string(offset + bytes) + ") exceeds the " +
                                    std::to_string(buffer.size()) + "-byte buffer");
  }
  return Status::ok();
}

Status cuda_usable() {
#if TEMPOKV_HAVE_CUDA
  return cuda_probe(0);
#else
  return Status::unavailable("this build has no CUDA (no toolkit found at configure time)");
#endif
}

Result<std::unique_ptr<TransferEngine>> make_transfer_engine(Executor& executor,
                                                             const TransferEngineOptions& options) {
  TEMPOKV_RETURN_IF_ERROR(options.validate());
  switch (options.kind) {
    case TransferEngineKind::kSimulated:
      return std::unique_ptr<TransferEngine>(new SimTransferEngine(executor, options));
    case TransferEngineKind::kEmulated:
      return std::unique_ptr<TransferEngine>(new EmulatedTransferEngine(executor, options));
    case TransferEngineKind::kCuda:
#if TEMPOKV_HAVE_CUDA
      return make_cuda_transfer_engine(executor, options);
#else
      return cuda_usable();
#endif
    case TransferEngineKind::kAuto:
#if TEMPOKV_HAVE_CUDA
      if (cuda_probe(options.cuda_device).is_ok()) {
        return make_cuda_transfer_engine(executor, options);
      }
#endif
      return std::unique_ptr<TransferEngine>(new EmulatedTransferEngine(executor, options));
  }
  return Status::invalid_argument("unknown transfer engine kind");
}

Result<TransferEngineKind> parse_transfer_engine_kind(std::string_view name) {
  if (name == "auto") return TransferEngineKind::kAuto;
  if (name == "emulated" || name == "memcpy") return TransferEngineKind::kEmulated;
  if (name == "cuda") return TransferEngineKind::kCuda;
  if (name == "sim" || name == "simulated") return TransferEngineKind::kSimulated;
  return Status::invalid_argument("unknown transfer engine '" + std::string(name) +
                                  "' (auto, emulated, cuda, simulated)");
}

}  // namespace tempokv
