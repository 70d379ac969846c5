#include "transfer/sim_transfer_engine.h"

#include <algorithm>
#include <cmath>

namespace tempokv {
namespace {

class SimDeviceBuffer final : public DeviceBuffer {
 public:
  explicit SimDeviceBuffer(size_t bytes) : bytes_(bytes) {}
  std::byte* data() const override { return nullptr; }
  size_t size() const override { return bytes_; }
  DeviceKind kind() const override { return DeviceKind::kSimulated; }

 private:
  size_t bytes_;
};

}  // namespace

SimTransferEngine::SimTransferEngine(Executor& executor, const TransferEngineOptions& options)
    : executor_(executor), options_(options) {}

Result<std::unique_ptr<DeviceBuffer>> SimTransferEngine::allocate(size_t bytes) {
  if (bytes == 0) return Status::invalid_argument("allocate: size is zero");
  return std::unique_ptr<DeviceBuffer>(new SimDeviceBuffer(bytes));
}

Duration SimTransferEngine::copy_time(size_t bytes) const {
  double ns = std::round(double(bytes) / options_.sim_bytes_per_s * 1e9);
  return options_.sim_copy_latency + Duration(static_cast<int64_t>(ns));
}

TimePoint SimTransferEngine::projected_finish(size_t bytes) const {
  return std::max(executor_.now(), link_free_at_) + copy_time(bytes);
}

void SimTransferEngine::copy_to_device(const void*, DeviceBuffer& dst, uint64_t dst_offset,
                                       size_t bytes, CopyCallback cb) {
  Status st = check_device_range(dst, dst_offset, bytes);
  if (!st.is_ok()) {
    ++stats_.errors;
    executor_.post([cb = std::move(cb), st = std::move(st)] { cb(st); });
    return;
  }
  TimePoint finish = projected_finish(bytes);
  link_free_at_ = finish;
  ++stats_.in_flight;
  executor_.at(finish, [this, bytes, cb = std::move(cb)] {
    --stats_.in_flight;
    ++stats_.copies;
    stats_.bytes += bytes;
    cb(Status::ok());
  });
}

Status SimTransferEngine::copy_to_host(const DeviceBuffer& src, uint64_t src_offset, void*,
                                       size_t bytes) {
  return check_device_range(src, src_offset, bytes);
}

}  // namespace tempokv
