// ErrorFeedback: the recent timing error of TempoKV's own commits (DESIGN.md §4 "Error
// feedback"), folded into its laxity so the rule stays TTU − TTR ≤ 0 while a commit moves earlier
// by about the lateness recently seen, and no earlier.
//
// For a claim committed by timing (before its retrieval was requested) at time c, with projected
// TTU_p = projected use − c and TTR_p, and actual TTU_a = requested − c, TTR_a = ready − c:
//   error = (TTR_a − TTR_p) − (TTU_a − TTU_p)
// is how much later than projected it became ready relative to its use. Committed at laxity L it
// shows lateness (ready − use) = error − L, so it would have been just in time with L = error.
// The error does not depend on the laxity used, so feeding it back does not chase its own effect
// (feeding back lateness would oscillate).
//
// margin() is the margin M ≥ 0 that would have cost the recent claims least, with lateness
// weighed q/(1 − q) times earliness (q = `quantile`): each claim with error e and read time r
// would have been early by max(M − e, 0) and late by min(max(e − M, 0), r), because a claim is
// never later than its read: one whose use came before its commit is committed at the use.
// Among equal costs the larger M (the side of caution). With no cap (r unbounded) this is the
// q-quantile of the errors (order statistic ⌊q·n⌋ for q in tenths or quarters): a claim whose
// use came seconds sooner than projected but that needed only a short read cannot alone move
// every later commit seconds earlier, unless nothing else was seen (then it is the margin).
//
// Not thread-safe: the controller's Executor thread.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "tempokv/executor.h"

namespace tempokv {

struct ErrorFeedbackOptions {
  uint32_t window = 32;      // recent errors remembered
  // Lateness weighs quantile / (1 − quantile) times earliness: 4 to 1. (0.9, 9 to 1, until the
  // store served reads before writes: the trace's staging then overran its TTR by seconds.)
  double quantile = 0.8;
  Duration max_margin = std::chrono::seconds(5);  // a bound on how early errors may move commits
};

class ErrorFeedback {
 public:
  explicit ErrorFeedback(ErrorFeedbackOptions options = {}) : options_(options) {}
  // error as above; read: how late the claim could be at most (its read time); unknown: no bound.
  void record(Duration error, Duration read = Duration::max());
  Duration margin() const { return margin_; }
  size_t samples() const { return recent_.size(); }

 private:
  struct Sample {
    Duration error;
    Duration read;
  };
  ErrorFeedbackOptions options_;
  std::deque<Sample> recent_;
  Duration margin_{0};
  // record()'s scratch (allocated once).
  std::vector<Duration> scratch_candidates_;
  std::vector<std::pair<Duration, size_t>> scratch_to_mid_, scratch_to_early_;
};

}  // namespace tempokv
