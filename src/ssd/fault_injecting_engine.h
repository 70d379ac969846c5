// FaultInjectingEngine: wraps any SsdEngine and injects faults, for tests of the components above
// it (store, staging provider, restore). It owns the wrapped engine.
//
// A fault is described by a Rule: which requests it matches (ops, file, offset range), when it
// starts (after `skip` matching requests, or once `pass_bytes` matching bytes went through), how
// many requests it affects (`count`), with what chance (`probability`, drawn from a seeded RNG so
// a run is repeatable), and what it does:
// * kError: the request is not forwarded; its callback gets Status::from_errno(error) (EIO →
//   IOError, ENOSPC → ResourceExhausted), with the request described in the message.
// * kShortTransfer: the request is forwarded, but the callback reports at most short_bytes (by
//   default half the length) — what a real engine reports at end of file.
// * kDelay: the request is forwarded `delay` later (an Executor timer), so it completes late.
// For one request every matching rule is consulted in the order added: the first error wins,
// delays add up, the smallest short transfer wins. Rules may be added and removed at any time.
//
// Power loss (enable_power_loss): writes go through a PageCacheModel, so only what the engine's
// own syncs made durable is sure to survive. crash() (or crash_after_requests) cuts the power:
// from then on every request, and every completion still to come, fails with EIO — the process
// is "dead" — and once nothing is in flight power_cut() rewrites the files as the disk would hold
// them (unsynced writes kept, lost or torn page by page).
//
// Thread safety: the rule methods and the SsdEngine methods are thread-safe when the wrapped
// engine's are (one mutex guards the rules and the RNG). Delays post to the Executor and then
// set a timer from the loop thread. Destroy the wrapper only when no request is in flight: a
// delayed request refers to it until forwarded.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

#include "ssd/forwarding_engine.h"
#include "ssd/io_args.h"
#include "ssd/page_cache_model.h"

namespace tempokv {

class FaultInjectingEngine final : public ForwardingEngine {
 public:
  // Bit mask of the operations a rule matches.
  enum Ops : uint8_t { kReads = 1, kWrites = 2, kSyncs = 4, kAllOps = 7 };
  enum class Action : uint8_t { kError, kShortTransfer, kDelay };
  static constexpr uint64_t kForever = std::numeric_limits<uint64_t>::max();

  struct Rule {
    uint8_t ops = kReads;        // which operations match
    std::optional<FileId> file;  // empty: every file
    uint64_t offset_begin = 0;   // match requests overlapping [offset_begin, offset_end)
    uint64_t offset_end = std::numeric_limits<uint64_t>::max();
    uint64_t skip = 0;          // matching requests let through before the rule starts
    uint64_t pass_bytes = 0;    // 0, or matching bytes let through before the rule starts
    uint64_t count = kForever;  // requests affected before the rule is spent
    double probability = 1.0;   // chance that an eligible request is affected
    Action action = Action::kError;
    int error = EIO;                                          // kError: the errno reported
    size_t short_bytes = std::numeric_limits<size_t>::max();  // kShortTransfer: max reported
                                                              // (max: half the request)
    Duration delay{};                                         // kDelay: added before forwarding
  };
  using RuleId = uint64_t;

  FaultInjectingEngine(Executor& executor, std::unique_ptr<SsdEngine> inner, uint64_t seed = 1);

  RuleId add_rule(const Rule& rule);
  void remove_rule(RuleId id);
  // Removes every rule (the RNG keeps its state).
  void clear();

  // Shorthands for the common schedules.
  RuleId fail_next_reads(uint64_t n, int error = EIO);
  RuleId fail_next_writes(uint64_t n, int error = EIO);
  RuleId fail_next_syncs(uint64_t n, int error = EIO);
  RuleId fail_nth_read(uint64_t nth, int error = EIO);  // 1-based, counted from now
  RuleId fail_reads_in_range(FileId file, uint64_t offset_begin, uint64_t offset_end,
                             int error = EIO);
  // Replaces the rule a previous call made; p = 0 just removes it.
  void set_read_error_probability(double p, int error = EIO);
  // Writes go through until `bytes` have been written from now; every later write fails.
  RuleId fail_writes_after_bytes(uint64_t bytes, int error = ENOSPC);
  RuleId short_transfer_next(uint64_t n, uint8_t ops = kReads | kWrites);
  // Every request from now on (of `ops`) is forwarded `delay` later.
  RuleId add_delay(Duration delay, uint8_t ops = kAllOps);

  uint64_t faults_injected() const;

  // Power-loss mode; call before any file is added. seed drives the fate of unsynced pages.
  void enable_power_loss(uint64_t seed);
  // The n-th request from now (1-based) finds the power cut: it and all later ones fail.
  void crash_after_requests(uint64_t n);
  void crash();
  bool crashed() const { return crashed_.load(); }
  // After crash() and once no request is in flight: forgets what was not durable.
  Result<PageCacheModel::CutReport> power_cut();

  Result<FileId> add_file(int fd) override;

  void read(FileId file, uint64_t offset, void* buf, size_t len, IoCallback cb,
            IoThreadHook on_io_thread = nullptr) override;
  void write(FileId file, uint64_t offset, const void* buf, size_t len, IoCallback cb) override;
  void sync(FileId file, IoCallback cb) override;

  // The wrapped engine's, plus injected errors (counted as requests and errors) and delayed
  // requests not yet forwarded (counted in flight).
  SsdEngineStats stats() const override;

 private:
  struct ActiveRule {
    RuleId id;
    Rule rule;
    uint64_t seen = 0;  // matching requests so far
    uint64_t seen_bytes = 0;
  };
  struct Effects {
    int error = 0;  // 0: none
    size_t report_max = std::numeric_limits<size_t>::max();
    Duration delay{};
  };

  Effects decide(IoOp op, FileId file, uint64_t offset, size_t len);
  // Power-loss mode: fails the request (true) when the power is cut, else wraps cb so that a
  // completion arriving after the cut fails too.
  bool dead(IoOp op, FileId file, uint64_t offset, size_t len, IoCallback& cb);
  // Applies the effects and calls `forward` (which issues the request on the inner engine) with
  // the callback to use, unless the request fails.
  void dispatch(IoOp op, FileId file, uint64_t offset, size_t len, IoCallback cb,
                std::function<void(IoCallback)> forward);
  double draw_locked();

  Executor& executor_;

  mutable std::mutex mu_;  // guards everything below
  std::mt19937_64 rng_;
  std::vector<ActiveRule> rules_;
  RuleId next_rule_id_ = 1;
  std::optional<RuleId> probability_rule_;
  uint64_t faults_injected_ = 0;
  SsdEngineStats injected_;  // request, error and in-flight counts the inner engine never saw
  std::unique_ptr<PageCacheModel> page_cache_;  // power-loss mode only; set before any I/O
  uint64_t crash_countdown_ = 0;                // 0: no crash scheduled
  std::atomic<bool> crashed_{false};
};

}  // namespace tempokv
