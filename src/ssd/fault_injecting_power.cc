// FaultInjectingEngine's power-loss mode (fault_injecting_engine.h): the crash, the requests it
// fails, and the cut that rewrites the files through the PageCacheModel.
#include "ssd/fault_injecting_engine.h"

namespace tempokv {

void FaultInjectingEngine::enable_power_loss(uint64_t seed) {
  page_cache_ = std::make_unique<PageCacheModel>(seed);
}

Result<FileId> FaultInjectingEngine::add_file(int fd) {
  Result<FileId> id = inner_->add_file(fd);
  if (id.is_ok() && page_cache_) page_cache_->add_file(*id, fd);
  return id;
}

void FaultInjectingEngine::crash_after_requests(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  crash_countdown_ = n;
}

void FaultInjectingEngine::crash() { crashed_.store(true); }

bool FaultInjectingEngine::dead(IoOp op, FileId file, uint64_t offset, size_t len, IoCallback& cb) {
  if (!page_cache_) return false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (crash_countdown_ > 0 && --crash_countdown_ == 0) crashed_.store(true);
  }
  std::string what = describe_io(inner_->name(), op, file, offset, len);
  if (crashed()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++injected_.errors;
    }
    executor_.post([cb = std::move(cb), what] {
      cb(Status::io_error("injected power loss: " + what + " after the crash"));
    });
    return true;
  }
  cb = [this, cb = std::move(cb), what = std::move(what)](Result<size_t> r) {
    if (crashed())
      r = Status::io_error("injected power loss: " + what + " completed after the crash");
    cb(std::move(r));
  };
  return false;
}

Result<PageCacheModel::CutReport> FaultInjectingEngine::power_cut() {
  if (!page_cache_) return Status::failed_precondition("power_cut: power-loss mode is not enabled");
  if (!crashed()) return Status::failed_precondition("power_cut: crash() first");
  if (inner_->stats().in_flight > 0) {
    return Status::failed_precondition("power_cut: requests still in flight");
  }
  return page_cache_->power_cut();
}

}  // namespace tempokv
