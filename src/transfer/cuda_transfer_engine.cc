#include "transfer/cuda_transfer_engine.h"

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace tempokv {
namespace {

Status cuda_status(cudaError_t err, std::string_view what) {
  if (err == cudaSuccess) return Status::ok();
  return Status::io_error(std::string(what) + ": " + cudaGetErrorName(err) + " (" +
                          cudaGetErrorString(err) + ")");
}

class CudaDeviceBuffer final : public DeviceBuffer {
 public:
  CudaDeviceBuffer(std::byte* p, size_t bytes, int device) : p_(p), bytes_(bytes), device_(device) {}
  ~CudaDeviceBuffer() override {
    cudaSetDevice(device_);
    cudaFree(p_);
  }
  std::byte* data() const override { return p_; }
  size_t size() const override { return bytes_; }
  DeviceKind kind() const override { return DeviceKind::kCuda; }

 private:
  std::byte* p_;
  size_t bytes_;
  int device_;
};

class CudaTransferEngine final : public TransferEngine {
 public:
  CudaTransferEngine(Executor& executor, int device, std::string device_name)
      : executor_(executor), device_(device), device_name_(std::move(device_name)) {}

  Status init() {
    TEMPOKV_RETURN_IF_ERROR(cuda_status(cudaSetDevice(device_), "cudaSetDevice"));
    TEMPOKV_RETURN_IF_ERROR(
        cuda_status(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream"));
    // Preallocated events: the copy path creates none.
    for (int i = 0; i < kEvents; ++i) {
      cudaEvent_t ev;
      TEMPOKV_RETURN_IF_ERROR(cuda_status(
          cudaEventCreateWithFlags(&ev, cudaEventDisableTiming | cudaEventBlockingSync),
          "cudaEventCreate"));
      free_events_.push_back(ev);
    }
    waiter_ = std::thread([this] { wait_loop(); });
    return Status::ok();
  }

  ~CudaTransferEngine() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (waiter_.joinable()) waiter_.join();
    cudaSetDevice(device_);
    for (auto ev : free_events_) cudaEventDestroy(ev);
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::string_view name() const override { return "cuda"; }
  DeviceKind device_kind() const override { return DeviceKind::kCuda; }
  std::string device_description() const override { return "cuda:" + device_name_; }

  Result<std::unique_ptr<DeviceBuffer>> allocate(size_t bytes) override {
    if (bytes == 0) return Status::invalid_argument("allocate: size is zero");
    cudaSetDevice(device_);
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
      return Status::resource_exhausted("cudaMalloc of " + std::to_string(bytes) + " bytes");
    }
    TEMPOKV_RETURN_IF_ERROR(cuda_status(err, "cudaMalloc"));
    return std::unique_ptr<DeviceBuffer>(
        new CudaDeviceBuffer(static_cast<std::byte*>(p), bytes, device_));
  }

  Status register_host(void* base, size_t bytes) override {
    cudaSetDevice(device_);
    return cuda_status(cudaHostRegister(base, bytes, cudaHostRegisterDefault),
                       "cudaHostRegister");
  }
  void unregister_host(void* base) override {
    cudaSetDevice(device_);
    cudaHostUnregister(base);
  }

  void copy_to_device(const void* src, DeviceBuffer& dst, uint64_t dst_offset, size_t bytes,
                      CopyCallback cb) override {
    Status st = check_device_range(dst, dst_offset, bytes);
    if (st.is_ok() && dst.kind() != DeviceKind::kCuda) {
      st = Status::invalid_argument("CUDA transfer engine needs a CUDA destination buffer");
    }
    if (st.is_ok()) {
      // Never waits for a free event on the caller's thread (the control loop): with every event
      // in use the copy queues, and the waiter thread issues it when a copy completes.
      Queued q{src, dst.data() + dst_offset, bytes, std::move(cb)};
      std::unique_lock lock(mu_);
      ++in_flight_;
      if (free_events_.empty() || !queued_.empty()) {
        queued_.push_back(std::move(q));
        return;
      }
      issue_locked(std::move(q));
      lock.unlock();
      cv_.notify_all();
      return;
    }
    {
      std::lock_guard lock(mu_);
      ++errors_;
    }
    executor_.post([cb = std::move(cb), st = std::move(st)] { cb(st); });
  }

  Status copy_to_host(const DeviceBuffer& src, uint64_t src_offset, void* dst,
                      size_t bytes) override {
    TEMPOKV_RETURN_IF_ERROR(check_device_range(src, src_offset, bytes));
    cudaSetDevice(device_);
    return cuda_status(
        cudaMemcpy(dst, src.data() + src_offset, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  }

  TransferStats stats() const override {
    std::lock_guard lock(mu_);
    return TransferStats{copies_, bytes_, errors_, in_flight_, counters_.snapshot()};
  }

 private:
  static constexpr int kEvents = 64;
  struct Pending {
    cudaEvent_t ev;
    size_t bytes;
    CopyCallback cb;
  };
  struct Queued {  // a copy waiting for a free event
    const void* src;
    std::byte* dst;
    size_t bytes;
    CopyCallback cb;
  };

  // Takes a free event and puts the copy on the stream; mu_ held, free_events_ not empty. A copy
  // the driver refuses completes with its error through the executor.
  void issue_locked(Queued q) {
    cudaEvent_t ev = free_events_.back();
    free_events_.pop_back();
    cudaSetDevice(device_);
    Status st = cuda_status(cudaMemcpyAsync(q.dst, q.src, q.bytes, cudaMemcpyHostToDevice, stream_),
                            "cudaMemcpyAsync");
    if (st.is_ok()) st = cuda_status(cudaEventRecord(ev, stream_), "cudaEventRecord");
    if (st.is_ok()) {
      if (is_pageable(q.src)) counters_.add_host(q.bytes);
      pending_.push_back(Pending{ev, q.bytes, std::move(q.cb)});
      return;
    }
    free_events_.push_back(ev);
    --in_flight_;
    ++errors_;
    executor_.post([cb = std::move(q.cb), st = std::move(st)] { cb(st); });
  }

  // The driver copies pageable sources through its own pinned staging buffer on the CPU.
  static bool is_pageable(const void* p) {
    cudaPointerAttributes attr{};
    if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) return true;
    return attr.type == cudaMemoryTypeUnregistered;
  }

  void wait_loop() {
    cudaSetDevice(device_);
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping (queued_ drains through pending_ first)
      Pending p = std::move(pending_.front());
      pending_.pop_front();
      lock.unlock();
      Status st = cuda_status(cudaEventSynchronize(p.ev), "cudaMemcpyAsync completion");
      executor_.post([cb = std::move(p.cb), st] { cb(st); });
      lock.lock();
      free_events_.push_back(p.ev);
      --in_flight_;
      if (st.is_ok()) {
        ++copies_;
        bytes_ += p.bytes;
      } else {
        ++errors_;
      }
      while (!queued_.empty() && !free_events_.empty()) {
        Queued q = std::move(queued_.front());
        queued_.pop_front();
        issue_locked(std::move(q));
      }
      cv_.notify_all();
    }
  }

  Executor& executor_;
  int device_;
  std::string device_name_;
  cudaStream_t stream_ = nullptr;
  CopyCounters counters_;
  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::vector<cudaEvent_t> free_events_;
  std::deque<Pending> pending_;
  std::deque<Queued> queued_;  // FIFO behind pending_, issued as events free up
  bool stop_ = false;
  uint64_t copies_ = 0, bytes_ = 0, errors_ = 0, in_flight_ = 0;
  std::thread waiter_;
};

}  // namespace

Status cuda_probe(int device) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    return Status::unavailable(std::string("no usable CUDA device: ") + cudaGetErrorString(err));
  }
  if (count == 0) return Status::unavailable("no CUDA device");
  if (device < 0 || device >= count) {
    return Status::invalid_argument("CUDA device " + std::to_string(device) + " of " +
                                    std::to_string(count));
  }
  return Status::ok();
}

Result<std::unique_ptr<TransferEngine>> make_cuda_transfer_engine(
    Executor& executor, const TransferEngineOptions& options) {
  TEMPOKV_RETURN_IF_ERROR(cuda_probe(options.cuda_device));
  cudaDeviceProp prop{};
  TEMPOKV_RETURN_IF_ERROR(
      cuda_status(cudaGetDeviceProperties(&prop, options.cuda_device), "cudaGetDeviceProperties"));
  auto engine = std::make_unique<CudaTransferEngine>(executor, options.cuda_device, prop.name);
  TEMPOKV_RETURN_IF_ERROR(engine->init());
  return std::unique_ptr<TransferEngine>(std::move(engine));
}

}  // namespace tempokv
