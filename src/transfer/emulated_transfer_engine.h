// EmulatedTransferEngine: "device memory" is host memory, and a copy worker thread memcpy()s into
// it in issue order, standing in for the DMA engine of a GPU. Every byte it copies is counted as
// an emulated device copy (CopyCounters), never as a host-side copy.
//
// Thread safety: as TransferEngine. One worker thread; callbacks are posted to the Executor.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "transfer/transfer_engine.h"

namespace tempokv {

class EmulatedTransferEngine final : public TransferEngine {
 public:
  EmulatedTransferEngine(Executor& executor, const TransferEngineOptions& options);
  ~EmulatedTransferEngine() override;

  std::string_view name() const override { return "emulated"; }
  DeviceKind device_kind() const override { return DeviceKind::kEmulated; }
  std::string device_description() const override { return "emulated"; }

  Result<std::unique_ptr<DeviceBuffer>> allocate(size_t bytes) override;
  Status register_host(void* base, size_t bytes) override;
  void unregister_host(void* base) override;
  void copy_to_device(const void* src, DeviceBuffer& dst, uint64_t dst_offset, size_t bytes,
                      CopyCallback cb) override;
  Status copy_to_host(const DeviceBuffer& src, uint64_t src_offset, void* dst,
                      size_t bytes) override;
  TransferStats stats() const override;
  // CPU time of the copy worker thread.
  double emulated_dma_cpu_seconds() const override;

 private:
  struct Job {
    const void* src;
    std::byte* dst;
    size_t bytes;
    CopyCallback cb;
  };
  void worker_loop();

  Executor& executor_;
  TransferEngineOptions options_;
  CopyCounters counters_;
  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::vector<std::pair<void*, size_t>> locked_;  // mlock()ed registrations
  bool stop_ = false;
  uint64_t copies_ = 0;
  uint64_t bytes_ = 0;
  uint64_t errors_ = 0;
  uint64_t in_flight_ = 0;
  pthread_t worker_handle_{};
  std::thread worker_;
  std::chrono::steady_clock::time_point link_free_{};  // worker only: when the emulated link is free
};

}  // namespace tempokv
