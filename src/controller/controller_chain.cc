// Controller: deadlines of claims read one after another (ControllerOptions::chain_deadlines).
//
// The provider reads committed claims in use order. A claim timed alone (TTU − TTR ≤ 0 with only
// the reads already queued ahead of it) is ready at its use only if nothing used at about the
// same time commits after it and reads ahead of it, or between it and its use. vLLM starts every
// waiting load at the first free slot, so the claims of one batch are used at one instant: timed
// alone, the last of four is late by three reads. Taken from the last planned claim backwards,
// each must be ready when the next must start; the laxity of each then counts from that deadline.
#include <algorithm>
#include <queue>

#include "controller/controller.h"

namespace tempokv {

TimePoint Controller::chain_deadlines(StagingProvider::TtrBoundWalk& bounds) {
  for (ClaimId id : chained_) {
    if (Rec* r = find(id)) r->lead = Duration::zero();
  }
  chained_.clear();
  if (!options_.chain_deadlines || !policy_->state_aware()) return TimePoint::min();
  chain_.clear();
  const size_t length = options_.chain_length;
  // Each index's claims in key order (keys are at most the use time): once `length` claims are
  // used before the key, no later claim of the index is among the soonest.
  std::priority_queue<TimePoint> soonest;  // the latest of the `length` soonest uses so far
  auto gather = [&](const std::set<std::pair<TimePoint, ClaimId>>& index) {
    soonest = {};
    for (const auto& [key, id] : index) {
      if (soonest.size() >= length && (length == 0 || key > soonest.top())) break;
      Rec& r = claims_.at(id);
      if (r.info.state != ClaimState::kPlanned || r.info.ordinary_only) continue;
      chain_.push_back({r.use_at, r.seq, Duration::zero(), &r});
      soonest.push(r.use_at);
      if (soonest.size() > length) soonest.pop();
    }
  };
  gather(by_use_);
  gather(waiting_);
  gather(resting_);
  gather(parked_by_use_);
  const size_t n = std::min(chain_.size(), length);
  std::partial_sort(chain_.begin(), chain_.begin() + static_cast<std::ptrdiff_t>(n), chain_.end());
  const double rate = bounds.bytes_per_s();
  for (size_t i = 0; i < n; ++i) {
    // A member with nothing to read (resting: every object resident) delays no one and needs no
    // time; nor does a claim the budget refuses now (it reads nothing before it fits).
    Rec& r = *chain_[i].rec;
    if (r.resting || (r.parked && refusal_stands(r)) || provider_.refused_now(r.claim)) continue;
    const uint64_t fresh = bounds.range(r.claim).fresh_bytes;
    chain_[i].own = Duration(static_cast<int64_t>(static_cast<double>(fresh) * 1e9 / rate));
  }
  TimePoint reach = TimePoint::min();
  TimePoint start = TimePoint::max();  // when the reads of the claims after this one must start
  for (size_t i = n; i-- > 0;) {
    const ChainMember& m = chain_[i];
    if (m.own == Duration::zero()) continue;
    const TimePoint due = std::min(m.use, start);
    if (due < m.use) {
      m.rec->lead = m.use - due;
      chained_.push_back(m.rec->info.id);
      reach = std::max(reach, m.use);
    }
    start = due - m.own;
  }
  return reach;
}

}  // namespace tempokv
