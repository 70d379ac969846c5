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
// (feeding back lateness would oscillate). margin() is a high quantile of the recent errors,
// never below zero: estimators that are early give no margin, late ones about their lateness.
//
// Not thread-safe: the controller's Executor thread.
#pragma once

#include <cstdint>
#include <deque>

#include "tempokv/executor.h"

namespace tempokv {

struct ErrorFeedbackOptions {
  uint32_t window = 32;      // recent errors remembered
  double quantile = 0.9;     // of them, the one margin() returns
  Duration max_margin = std::chrono::seconds(5);  // a bound on how early errors may move commits
};

class ErrorFeedback {
 public:
  explicit ErrorFeedback(ErrorFeedbackOptions options = {}) : options_(options) {}
  void record(Duration error);
  Duration margin() const { return margin_; }
  size_t samples() const { return recent_.size(); }

 private:
  ErrorFeedbackOptions options_;
  std::deque<Duration> recent_;
  Duration margin_{0};
};

}  // namespace tempokv
