#include "ssd/fault_injecting_engine.h"

#include <algorithm>

namespace tempokv {

FaultInjectingEngine::FaultInjectingEngine(Executor& executor, std::unique_ptr<SsdEngine> inner,
                                           uint64_t seed)
    : ForwardingEngine(std::move(inner)), executor_(executor), rng_(seed) {}

FaultInjectingEngine::RuleId FaultInjectingEngine::add_rule(const Rule& rule) {
  std::lock_guard<std::mutex> lock(mu_);
  RuleId id = next_rule_id_++;
  rules_.push_back(ActiveRule{id, rule});
  return id;
}

void FaultInjectingEngine::remove_rule(RuleId id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(rules_, [&](const ActiveRule& r) { return r.id == id; });
}

void FaultInjectingEngine::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  rules_.clear();
  probability_rule_.reset();
}

FaultInjectingEngine::RuleId FaultInjectingEngine::fail_next_reads(uint64_t n, int error) {
  return add_rule(Rule{.ops = kReads, .count = n, .error = error});
}

FaultInjectingEngine::RuleId FaultInjectingEngine::fail_next_writes(uint64_t n, int error) {
  return add_rule(Rule{.ops = kWrites, .count = n, .error = error});
}

FaultInjectingEngine::RuleId FaultInjectingEngine::fail_next_syncs(uint64_t n, int error) {
  return add_rule(Rule{.ops = kSyncs, .count = n, .error = error});
}

FaultInjectingEngine::RuleId FaultInjectingEngine::fail_nth_read(uint64_t nth, int error) {
  return add_rule(Rule{.ops = kReads, .skip = nth > 0 ? nth - 1 : 0, .count = 1, .error = error});
}

FaultInjectingEngine::RuleId FaultInjectingEngine::fail_reads_in_range(FileId file,
                                                                       uint64_t offset_begin,
                                                                       uint64_t offset_end,
                                                                       int error) {
  return add_rule(Rule{.ops = kReads,
                       .file = file,
                       .offset_begin = offset_begin,
                       .offset_end = offset_end,
                       .error = error});
}

void FaultInjectingEngine::set_read_error_probability(double p, int error) {
  std::optional<RuleId> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    old = probability_rule_;
    probability_rule_.reset();
  }
  if (old) remove_rule(*old);
  if (p <= 0) return;
  RuleId id = add_rule(Rule{.ops = kReads, .probability = p, .error = error});
  std::lock_guard<std::mutex> lock(mu_);
  probability_rule_ = id;
}

FaultInjectingEngine::RuleId FaultInjectingEngine::fail_writes_after_bytes(uint64_t bytes,
                                                                           int error) {
  // pass_bytes 0 means "no byte budget", which fails every write — the same as a budget of 0.
  return add_rule(Rule{.ops = kWrites, .pass_bytes = bytes, .error = error});
}

FaultInjectingEngine::RuleId FaultInjectingEngine::short_transfer_next(uint64_t n, uint8_t ops) {
  return add_rule(Rule{.ops = ops, .count = n, .action = Action::kShortTransfer});
}

FaultInjectingEngine::RuleId FaultInjectingEngine::add_delay(Duration delay, uint8_t ops) {
  return add_rule(Rule{.ops = ops, .action = Action::kDelay, .delay = delay});
}

uint64_t FaultInjectingEngine::faults_injected() const {
  std::lock_guard<std::mutex> lock(mu_);
  return faults_injected_;
}

double FaultInjectingEngine::draw_locked() {
  // 53 random bits → [0, 1); unlike std::uniform_real_distribution, the same on every stdlib.
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

FaultInjectingEngine::Effects FaultInjectingEngine::decide(IoOp op, FileId file, uint64_t offset,
                                                           size_t len) {
  uint8_t bit = op == IoOp::kRead ? kReads : op == IoOp::kWrite ? kWrites : kSyncs;
  Effects fx;
  std::lock_guard<std::mutex> lock(mu_);
  for (ActiveRule& r : rules_) {
    const Rule& rule = r.rule;
    if ((rule.ops & bit) == 0) continue;
    if (rule.file && *rule.file != file) continue;
    uint64_t end = offset + std::max<uint64_t>(len, 1);  // a sync matches at offset 0
    if (end <= rule.offset_begin || offset >= rule.offset_end) continue;
    bool started =
        r.seen >= rule.skip && (rule.pass_bytes == 0 || r.seen_bytes + len > rule.pass_bytes);
    ++r.seen;
    r.seen_bytes += len;
    if (!started || rule.count == 0) continue;
    if (rule.probability < 1.0 && draw_locked() >= rule.probability) continue;
    if (rule.count != kForever) --r.rule.count;
    ++faults_injected_;
    switch (rule.action) {
      case Action::kError:
        if (fx.error == 0) fx.error = rule.error;
        break;
      case Action::kShortTransfer:
        fx.report_max = std::min(
            fx.report_max,
            rule.short_bytes == std::numeric_limits<size_t>::max() ? len / 2 : rule.short_bytes);
        break;
      case Action::kDelay:
        fx.delay += rule.delay;
        break;
    }
  }
  std::erase_if(rules_, [](const ActiveRule& r) { return r.rule.count == 0; });
  return fx;
}

void FaultInjectingEngine::dispatch(IoOp op, FileId file, uint64_t offset, size_t len,
                                    IoCallback cb, std::function<void(IoCallback)> forward) {
  Effects fx = decide(op, file, offset, len);
  std::function<void()> go;
  if (fx.error != 0) {
    Status st = Status::from_errno(
        fx.error, "injected fault: " + describe_io(inner_->name(), op, file, offset, len));
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++injected_.errors;
      if (op == IoOp::kRead) ++injected_.reads;
      if (op == IoOp::kWrite) ++injected_.writes;
      if (op == IoOp::kSync) ++injected_.syncs;
    }
    go = [cb = std::move(cb), st = std::move(st)] { cb(st); };
  } else {
    if (fx.report_max != std::numeric_limits<size_t>::max()) {
      cb = [cb = std::move(cb), max = fx.report_max](Result<size_t> r) {
        if (r.is_ok() && *r > max) r = max;
        cb(std::move(r));
      };
    }
    go = [forward = std::move(forward), cb = std::move(cb)]() mutable { forward(std::move(cb)); };
  }
  if (fx.delay <= Duration::zero()) {
    if (fx.error != 0) {
      executor_.post(std::move(go));
    } else {
      go();
    }
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++injected_.in_flight;
  }
  // Timers may only be set on the loop thread; post() gets there from any thread at the same
  // (virtual) time, so the delay is exact in simulation.
  executor_.post([this, delay = fx.delay, go = std::move(go)]() mutable {
    executor_.after(delay, [this, go = std::move(go)] {
      {
        std::lock_guard<std::mutex> lock(mu_);
        --injected_.in_flight;
      }
      go();
    });
  });
}

void FaultInjectingEngine::read(FileId file, uint64_t offset, void* buf, size_t len, IoCallback cb,
                                IoThreadHook on_io_thread) {
  if (dead(IoOp::kRead, file, offset, len, cb)) return;
  dispatch(IoOp::kRead, file, offset, len, std::move(cb),
           [this, file, offset, buf, len, hook = std::move(on_io_thread)](IoCallback c) {
             inner_->read(file, offset, buf, len, std::move(c), hook);
           });
}

void FaultInjectingEngine::write(FileId file, uint64_t offset, const void* buf, size_t len,
                                 IoCallback cb) {
  if (dead(IoOp::kWrite, file, offset, len, cb)) return;
  if (page_cache_) {
    Result<uint64_t> id = page_cache_->before_write(file, offset, len);
    if (!id.is_ok()) {
      executor_.post([cb = std::move(cb), st = id.status()] { cb(st); });
      return;
    }
    cb = [this, write_id = *id, cb = std::move(cb)](Result<size_t> r) {
      page_cache_->write_done(write_id);
      cb(std::move(r));
    };
  }
  dispatch(IoOp::kWrite, file, offset, len, std::move(cb),
           [this, file, offset, buf, len](IoCallback c) {
             inner_->write(file, offset, buf, len, std::move(c));
           });
}

void FaultInjectingEngine::sync(FileId file, IoCallback cb) {
  if (dead(IoOp::kSync, file, 0, 0, cb)) return;
  if (page_cache_) {
    // Covers the writes completed before it was issued; durable only if it succeeds in time.
    cb = [this, ids = page_cache_->sync_issued(file), cb = std::move(cb)](Result<size_t> r) {
      page_cache_->sync_done(ids, r.is_ok() && !crashed());
      cb(std::move(r));
    };
  }
  dispatch(IoOp::kSync, file, 0, 0, std::move(cb),
           [this, file](IoCallback c) { inner_->sync(file, std::move(c)); });
}

SsdEngineStats FaultInjectingEngine::stats() const {
  SsdEngineStats s = inner_->stats();
  std::lock_guard<std::mutex> lock(mu_);
  s.reads += injected_.reads;
  s.writes += injected_.writes;
  s.syncs += injected_.syncs;
  s.errors += injected_.errors;
  s.in_flight += injected_.in_flight;
  return s;
}

}  // namespace tempokv
