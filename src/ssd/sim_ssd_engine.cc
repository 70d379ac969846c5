#include "ssd/sim_ssd_engine.h"

#include <algorithm>
#include <cmath>

#include "common/splitmix.h"

namespace tempokv {
namespace {

// Floating-point slack, in nanoseconds of device time: a request whose remaining time is within
// it counts as done, and completion times are rounded up only past it. Far below the 1 ns
// resolution of the clock, far above the rounding error of a few divisions.
constexpr double kEpsNs = 1e-3;

}  // namespace

SimSsdEngine::SimSsdEngine(Executor& executor, const SsdEngineOptions& options)
    : executor_(executor), options_(options) {}

SimSsdEngine::~SimSsdEngine() {
  departure_timer_.cancel();
  auto cancel = [&](RequestPtr& req) {
    req->timer.cancel();
    Status st = Status::cancelled(describe_io(name(), req->op, req->file, req->offset, req->bytes) +
                                  ": the simulated engine was destroyed first");
    executor_.post([cb = std::move(req->cb), st = std::move(st)] { cb(st); });
  };
  for (auto& req : queued_) cancel(req);
  for (auto& [id, req] : latency_) cancel(req);
  for (auto& req : transferring_) cancel(req);
  for (auto& [id, req] : syncs_) cancel(req);
}

Result<FileId> SimSsdEngine::add_file(int /*fd*/) {
  for (size_t i = 0; i < files_.size(); ++i) {
    if (!files_[i]) {
      files_[i] = true;
      return static_cast<FileId>(i);
    }
  }
  files_.push_back(true);
  return static_cast<FileId>(files_.size() - 1);
}

void SimSsdEngine::remove_file(FileId file) {
  if (file < files_.size()) files_[file] = false;
}

void SimSsdEngine::read(FileId file, uint64_t offset, void* buf, size_t len, IoCallback cb,
                        IoThreadHook on_io_thread) {
  submit(IoOp::kRead, file, offset, buf, len, std::move(cb), std::move(on_io_thread));
}

void SimSsdEngine::write(FileId file, uint64_t offset, const void* buf, size_t len, IoCallback cb) {
  submit(IoOp::kWrite, file, offset, buf, len, std::move(cb), nullptr);
}

void SimSsdEngine::sync(FileId file, IoCallback cb) {
  submit(IoOp::kSync, file, 0, nullptr, 0, std::move(cb), nullptr);
}

void SimSsdEngine::submit(IoOp op, FileId file, uint64_t offset, const void* buf, size_t len,
                          IoCallback cb, IoThreadHook hook) {
  Status st;
  if (file >= files_.size() || !files_[file]) {
    st = Status::invalid_argument(describe_io(name(), op, file, offset, len) + ": file id " +
                                  std::to_string(file) + " is not added");
  } else if (op != IoOp::kSync) {
    st = check_direct_alignment(name(), op, file, offset, buf, len, options_.direct);
  }
  if (!st.is_ok()) {
    ++stats_.errors;
    if (op == IoOp::kRead) ++stats_.reads;
    if (op == IoOp::kWrite) ++stats_.writes;
    if (op == IoOp::kSync) ++stats_.syncs;
    executor_.post([cb = std::move(cb), st = std::move(st)] { cb(st); });
    return;
  }
  double rate = op == IoOp::kRead ? options_.sim_read_bytes_per_s : options_.sim_write_bytes_per_s;
  double work_ns = op == IoOp::kSync ? 0.0 : static_cast<double>(len) * 1e9 / rate;
  auto req = std::make_unique<Request>(
      Request{next_id_++, op, file, offset, len, work_ns, std::move(cb), std::move(hook), {}});
  ++stats_.in_flight;
  if (op == IoOp::kSync) {
    uint64_t id = req->id;
    req->timer = executor_.after(options_.sim_latency, [this, id] {
      auto it = syncs_.find(id);
      RequestPtr done = std::move(it->second);
      syncs_.erase(it);
      complete(std::move(done), size_t{0});
    });
    syncs_.emplace(id, std::move(req));
    return;
  }
  if (queued_.empty() && in_service_ < options_.sim_max_concurrency) {
    start_service(std::move(req));
  } else {
    queued_.push_back(std::move(req));
  }
}

Duration SimSsdEngine::latency() {
  if (tail_probability_ <= 0 || uniform01(tail_state_) >= tail_probability_) {
    return options_.sim_latency;
  }
  return from_seconds(to_seconds(options_.sim_latency) * tail_factor_);
}

void SimSsdEngine::start_service(RequestPtr req) {
  if (in_service_++ == 0) busy_since_ = executor_.now();
  uint64_t id = req->id;
  req->timer = executor_.after(latency(), [this, id] { on_latency_done(id); });
  latency_.emplace(id, std::move(req));
}

void SimSsdEngine::on_latency_done(uint64_t id) {
  auto it = latency_.find(id);
  RequestPtr req = std::move(it->second);
  latency_.erase(it);
  if (req->work_ns <= 0) {
    size_t bytes = req->bytes;
    complete(std::move(req), bytes);
    return;
  }
  advance();
  transferring_.push_back(std::move(req));
  reschedule_departure();
}

void SimSsdEngine::advance() {
  TimePoint now = executor_.now();
  if (!transferring_.empty()) {
    double share_ns = static_cast<double>((now - last_advance_).count()) /
                      static_cast<double>(transferring_.size());
    for (auto& req : transferring_) req->work_ns -= share_ns;
  }
  last_advance_ = now;
}

void SimSsdEngine::reschedule_departure() {
  departure_timer_.cancel();
  if (transferring_.empty()) return;
  double min_work_ns = transferring_.front()->work_ns;
  for (auto& req : transferring_) min_work_ns = std::min(min_work_ns, req->work_ns);
  double wait_ns = min_work_ns * static_cast<double>(transferring_.size());
  auto wait = static_cast<int64_t>(std::max(0.0, std::ceil(wait_ns - kEpsNs)));
  departure_timer_ = executor_.at(last_advance_ + Duration(wait), [this] { on_departure(); });
}

void SimSsdEngine::on_departure() {
  advance();
  double n = static_cast<double>(transferring_.size());
  std::vector<RequestPtr> done;
  auto keep = transferring_.begin();
  for (auto& req : transferring_) {
    if (req->work_ns * n <= kEpsNs) {
      done.push_back(std::move(req));
    } else {
      *keep++ = std::move(req);
    }
  }
  transferring_.erase(keep, transferring_.end());
  for (auto& req : done) {
    size_t bytes = req->bytes;
    complete(std::move(req), bytes);
  }
  reschedule_departure();
}

void SimSsdEngine::complete(RequestPtr req, Result<size_t> result) {
  if (req->op != IoOp::kSync && --in_service_ == 0) {
    busy_ns_ += static_cast<uint64_t>((executor_.now() - busy_since_).count());
  }
  if (result.is_ok() && req->hook) {
    Status st = req->hook(*result);
    if (!st.is_ok()) result = std::move(st);
  }
  --stats_.in_flight;
  if (req->op == IoOp::kRead) ++stats_.reads;
  if (req->op == IoOp::kWrite) ++stats_.writes;
  if (req->op == IoOp::kSync) ++stats_.syncs;
  if (!result.is_ok()) {
    ++stats_.errors;
  } else if (req->op == IoOp::kRead) {
    stats_.bytes_read += *result;
  } else if (req->op == IoOp::kWrite) {
    stats_.bytes_written += *result;
  }
  executor_.post([cb = std::move(req->cb), result = std::move(result)] { cb(result); });
  admit_queued();
}

void SimSsdEngine::admit_queued() {
  while (!queued_.empty() && in_service_ < options_.sim_max_concurrency) {
    RequestPtr req = std::move(queued_.front());
    queued_.pop_front();
    start_service(std::move(req));
  }
}

SsdEngineStats SimSsdEngine::stats() const {
  SsdEngineStats s = stats_;
  s.busy_ns = busy_ns_;
  if (in_service_ > 0) s.busy_ns += static_cast<uint64_t>((executor_.now() - busy_since_).count());
  return s;
}

}  // namespace tempokv
