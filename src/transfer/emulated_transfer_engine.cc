#include "transfer/emulated_transfer_engine.h"

#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cstring>

#include "common/aligned_buffer.h"

namespace tempokv {
namespace {

class EmulatedDeviceBuffer final : public DeviceBuffer {
 public:
  explicit EmulatedDeviceBuffer(AlignedBuffer buf) : buf_(std::move(buf)) {}
  std::byte* data() const override { return const_cast<std::byte*>(buf_.data()); }
  size_t size() const override { return buf_.size(); }
  DeviceKind kind() const override { return DeviceKind::kEmulated; }

 private:
  AlignedBuffer buf_;
};

}  // namespace

EmulatedTransferEngine::EmulatedTransferEngine(Executor& executor,
                                               const TransferEngineOptions& options)
    : executor_(executor), options_(options) {
  worker_ = std::thread([this] { worker_loop(); });
  worker_handle_ = worker_.native_handle();
}

EmulatedTransferEngine::~EmulatedTransferEngine() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
  for (auto& [p, n] : locked_) munlock(p, n);
}

Result<std::unique_ptr<DeviceBuffer>> EmulatedTransferEngine::allocate(size_t bytes) {
  // Huge pages where the kernel has them: the device copy streams through the whole buffer.
  TEMPOKV_ASSIGN_OR_RETURN(AlignedBuffer buf, AlignedBuffer::allocate(bytes, /*huge_pages=*/true));
  return std::unique_ptr<DeviceBuffer>(new EmulatedDeviceBuffer(std::move(buf)));
}

Status EmulatedTransferEngine::register_host(void* base, size_t bytes) {
  if (base == nullptr || bytes == 0) {
    return Status::invalid_argument("register_host: empty buffer");
  }
  if (!options_.pin_with_mlock) return Status::ok();
  // Pinning is what a real registration does; failing it (RLIMIT_MEMLOCK) only costs realism.
  if (mlock(base, bytes) == 0) {
    std::lock_guard lock(mu_);
    locked_.emplace_back(base, bytes);
  }
  return Status::ok();
}

void EmulatedTransferEngine::unregister_host(void* base) {
  std::lock_guard lock(mu_);
  auto it = std::find_if(locked_.begin(), locked_.end(),
                         [base](const auto& e) { return e.first == base; });
  if (it == locked_.end()) return;
  munlock(it->first, it->second);
  locked_.erase(it);
}

void EmulatedTransferEngine::copy_to_device(const void* src, DeviceBuffer& dst,
                                            uint64_t dst_offset, size_t bytes, CopyCallback cb) {
  Status st = check_device_range(dst, dst_offset, bytes);
  if (st.is_ok() && dst.kind() != DeviceKind::kEmulated) {
    st = Status::invalid_argument("emulated transfer engine cannot copy into a " +
                                  std::string(device_kind_name(dst.kind())) + " buffer");
  }
  if (st.is_ok() && src == nullptr) st = Status::invalid_argument("copy_to_device: null source");
  if (!st.is_ok()) {
    {
      std::lock_guard lock(mu_);
      ++errors_;
    }
    executor_.post([cb = std::move(cb), st = std::move(st)] { cb(st); });
    return;
  }
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(Job{src, dst.data() + dst_offset, bytes, std::move(cb)});
    ++in_flight_;
  }
  cv_.notify_one();
}

Status EmulatedTransferEngine::copy_to_host(const DeviceBuffer& src, uint64_t src_offset,
                                            void* dst, size_t bytes) {
  TEMPOKV_RETURN_IF_ERROR(check_device_range(src, src_offset, bytes));
  std::memcpy(dst, src.data() + src_offset, bytes);
  return Status::ok();
}

void EmulatedTransferEngine::worker_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stop_ with nothing left: destruction waits for copies
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(job.dst, job.src, job.bytes);
    counters_.add_emulated_device(job.bytes);
    if (options_.emulated_link_bytes_per_s > 0) {
      // The link carries one copy after another: this one ends no earlier than its bytes at the
      // link's rate after the link came free (or after it started, if the link was idle).
      link_free_ = std::max(link_free_, start) +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                       std::chrono::duration<double>(double(job.bytes) /
                                                     options_.emulated_link_bytes_per_s));
      std::this_thread::sleep_until(link_free_);
    }
    lock.lock();
    // Count the copy before its callback can run, so a caller that saw it complete sees it in
    // stats() too.
    ++copies_;
    bytes_ += job.bytes;
    --in_flight_;
    executor_.post([cb = std::move(job.cb)] { cb(Status::ok()); });
  }
}

TransferStats EmulatedTransferEngine::stats() const {
  std::lock_guard lock(mu_);
  return TransferStats{copies_, bytes_, errors_, in_flight_, counters_.snapshot()};
}

double EmulatedTransferEngine::emulated_dma_cpu_seconds() const {
  clockid_t cid;
  if (pthread_getcpuclockid(worker_handle_, &cid) != 0) return 0;
  timespec ts{};
  if (clock_gettime(cid, &ts) != 0) return 0;
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

}  // namespace tempokv
