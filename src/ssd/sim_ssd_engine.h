// SimSsdEngine: an SSD that moves no bytes and only takes time, for simulated mode. Completions
// are Executor timers; there are no threads.
//
// Model (exact and deterministic, so tests assert exact virtual times):
// * A read or write first waits for one of sim_max_concurrency service slots (FIFO), then spends
//   sim_latency holding its slot, then transfers its bytes.
// * Transfers share one device by processor sharing: with n requests transferring, each gets 1/n
//   of the device, so a read moves at sim_read_bytes_per_s / n and a write at
//   sim_write_bytes_per_s / n. Reads and writes thus share one pool whose work is measured in
//   device time (bytes / the rate of the request's kind). Every arrival and departure recomputes
//   the next completion and reschedules its timer.
// * Completion times are rounded up to whole nanoseconds (ceil), identically on every run.
// * sync takes sim_latency and no slot.
// * A latency tail (set_latency_tail, off by default): with probability p a request's latency
//   phase lasts sim_latency × factor, drawn from a seeded stream (the hidden truth of the
//   evaluation: a device whose tail no TTR model is told about).
// * options.direct keeps the O_DIRECT alignment rule, so alignment bugs show in simulation too;
//   buffers may be null. add_file takes any fd, -1 included. The IoThreadHook runs on the loop
//   thread with the byte count (no data moved).
//
// Thread safety: none — every method, stats() included, is called on the Executor's loop thread
// (or before the loop runs, by the thread that owns it), as Executor::at requires. Destroying the
// engine completes requests still in flight with Cancelled.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "ssd/io_args.h"
#include "ssd/ssd_engine.h"

namespace tempokv {

class SimSsdEngine final : public SsdEngine {
 public:
  SimSsdEngine(Executor& executor, const SsdEngineOptions& options);
  ~SimSsdEngine() override;
  SimSsdEngine(const SimSsdEngine&) = delete;
  SimSsdEngine& operator=(const SimSsdEngine&) = delete;

  std::string_view name() const override { return "sim"; }
  bool direct() const override { return options_.direct; }
  Result<FileId> add_file(int fd) override;
  void remove_file(FileId file) override;
  Status register_buffer(void*, size_t) override { return Status::ok(); }
  void unregister_buffer(void*) override {}

  void read(FileId file, uint64_t offset, void* buf, size_t len, IoCallback cb,
            IoThreadHook on_io_thread = nullptr) override;
  void write(FileId file, uint64_t offset, const void* buf, size_t len, IoCallback cb) override;
  void sync(FileId file, IoCallback cb) override;

  // With probability `probability`, a request's latency is sim_latency × factor (seeded draws).
  void set_latency_tail(double probability, double factor, uint64_t seed) {
    tail_probability_ = probability;
    tail_factor_ = factor;
    tail_state_ = seed ^ 0x737364ULL;
  }

  // busy_ns includes the current busy period up to now().
  SsdEngineStats stats() const override;

  // Requests waiting for a slot / holding one (latency or transfer phase).
  size_t queued() const { return queued_.size(); }
  size_t in_service() const { return in_service_; }

 private:
  struct Request {
    uint64_t id;
    IoOp op;
    FileId file;
    uint64_t offset;
    size_t bytes;
    double work_ns;  // device time still needed, at the full rate of the request's kind
    IoCallback cb;
    IoThreadHook hook;
    TimerHandle timer;  // latency timer (requests in the latency phase and syncs)
  };
  using RequestPtr = std::unique_ptr<Request>;

  void submit(IoOp op, FileId file, uint64_t offset, const void* buf, size_t len, IoCallback cb,
              IoThreadHook hook);
  void start_service(RequestPtr req);
  void on_latency_done(uint64_t id);
  // Charges the transferring requests for the device time since the last call.
  void advance();
  void reschedule_departure();
  void on_departure();
  void complete(RequestPtr req, Result<size_t> result);
  void admit_queued();

  Duration latency();  // sim_latency, or its tail

  Executor& executor_;
  const SsdEngineOptions options_;
  double tail_probability_ = 0;
  double tail_factor_ = 1;
  uint64_t tail_state_ = 0;
  std::vector<bool> files_;  // index = FileId; true while added
  uint64_t next_id_ = 1;

  std::deque<RequestPtr> queued_;           // waiting for a slot, FIFO
  std::map<uint64_t, RequestPtr> latency_;  // holding a slot, in the latency phase; by id
  std::vector<RequestPtr> transferring_;    // holding a slot, sharing the device
  std::map<uint64_t, RequestPtr> syncs_;    // by id
  size_t in_service_ = 0;
  TimePoint last_advance_{};
  TimerHandle departure_timer_;
  TimePoint busy_since_{};
  uint64_t busy_ns_ = 0;  // closed busy periods
  SsdEngineStats stats_;
};

}  // namespace tempokv
