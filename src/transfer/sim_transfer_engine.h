// SimTransferEngine: the simulated-mode transfer engine. No bytes move; a copy takes time by a
// rate model and completes as an Executor timer, so simulated scenarios get exact times.
//
// Model: one link, copies served one after another in issue order. A copy issued at t starts at
// max(t, the previous copy's finish) and finishes sim_copy_latency + bytes / sim_bytes_per_s
// later (rounded to the nanosecond). DeviceBuffers are size-only (data() is nullptr).
//
// Thread safety: call everything on the Executor's thread (simulated mode has no other threads).
#pragma once

#include "transfer/transfer_engine.h"

namespace tempokv {

class SimTransferEngine final : public TransferEngine {
 public:
  SimTransferEngine(Executor& executor, const TransferEngineOptions& options);

  std::string_view name() const override { return "simulated"; }
  DeviceKind device_kind() const override { return DeviceKind::kSimulated; }
  std::string device_description() const override { return "simulated"; }

  Result<std::unique_ptr<DeviceBuffer>> allocate(size_t bytes) override;
  Status register_host(void*, size_t) override { return Status::ok(); }
  void unregister_host(void*) override {}
  void copy_to_device(const void* src, DeviceBuffer& dst, uint64_t dst_offset, size_t bytes,
                      CopyCallback cb) override;
  // Nothing to copy; checks the range only.
  Status copy_to_host(const DeviceBuffer& src, uint64_t src_offset, void* dst,
                      size_t bytes) override;
  TransferStats stats() const override { return stats_; }

  // When a copy of `bytes` issued now would complete (for estimators).
  TimePoint projected_finish(size_t bytes) const;

 private:
  Duration copy_time(size_t bytes) const;

  Executor& executor_;
  TransferEngineOptions options_;
  TimePoint link_free_at_{};
  TransferStats stats_;
};

}  // namespace tempokv
