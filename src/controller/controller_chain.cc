// Controller: deadlines of claims read one after another (ControllerOptions::chain_deadlines).
//
// The provider reads committed claims in use order. A claim timed alone (TTU − TTR ≤ 0 with only
// the reads already queued ahead of it) is ready at its use only if nothing used at about the
// same time commits after it and reads ahead of it, or between it and its use. vLLM starts every
// waiting load at the first free slot, so the claims of one batch are used at one instant: timed
// alone, the last of four is late by three reads. Taken from the last planned claim backwards,
// each must be ready when the next must start; the laxity of each then counts from that deadline.
#include <algorithm>

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
  // Each index's claims in (key, id) order (keys are at most the use time). soonest_: the
  // `length` soonest (use, id) of the index so far, ascending (a few; no heap work per pass).
  // Once an entry's (key, id) is after the last of them, it is used later, or at that use with a
  // larger id, as is every entry after it: none is among the soonest. So a batch of claims used
  // at one instant costs `length` steps, not one per claim.
  auto gather = [&](const UseIndex& index) {
    soonest_.clear();
    for (const auto& [key, id] : index) {
      if (soonest_.size() >= length && (length == 0 || std::pair{key, id} > soonest_.back())) {
        break;
      }
      ++stats_.chain_visits;
      Rec& r = claims_.at(id);
      if (r.info.state != ClaimState::kPlanned || r.info.ordinary_only) continue;
      // ControllerOptions::chain_skips_bounds: a claim projected only to a lower bound is no
      // member, but it still ends the gather as a member would (its true use is later still).
      // Once `length` claims are gathered, the first bound ends it: keys lag their uses, so the
      // bounds of a long queue (all at the projection's cut, just past the horizon) would
      // otherwise be walked to the last, each a step (100,000 waiting: 99,745 per pass).
      const bool bound = r.ttu_bound && options_.chain_skips_bounds;
      if (bound && soonest_.size() >= length) break;
      if (!bound) chain_.push_back({r.use_at, id, &r});
      const std::pair<TimePoint, ClaimId> use{r.use_at, id};
      soonest_.insert(std::upper_bound(soonest_.begin(), soonest_.end(), use), use);
      if (soonest_.size() > length) soonest_.pop_back();
    }
  };
  gather(by_use_);
  gather(waiting_);
  gather(resting_);
  gather(parked_by_use_);
  const size_t n = std::min(chain_.size(), length);
  std::partial_sort(chain_.begin(), chain_.begin() + static_cast<std::ptrdiff_t>(n), chain_.end());
  const double rate = bounds.bytes_per_s();
  auto read_time = [rate](uint64_t bytes) {
    return Duration(static_cast<int64_t>(static_cast<double>(bytes) * 1e9 / rate));
  };
  // The time a member's new reads take. A member with nothing to read (resting: every object
  // resident) delays no one and needs no time; nor does a claim the budget refuses now (it reads
  // nothing before it fits).
  auto own = [&](const Rec& r) {
    if (r.resting || (r.parked && refusal_stands(r)) || provider_.refused_now(r.claim)) {
      return Duration::zero();
    }
    return read_time(bounds.range(r.claim).fresh_bytes);
  };
  TimePoint reach = TimePoint::min();
  TimePoint start = TimePoint::max();  // when the reads of the claims after this one must start
  for (size_t i = n; i-- > 0;) {
    const ChainMember& m = chain_[i];
    const TimePoint due = std::min(m.use, start);
    // Its own time is needed only if it gets a lead, or if the earlier member's deadline may
    // fall before that one's use: not when even all of its manifest's bytes, read new, would
    // start no earlier than that use (its own time is at most that: fresh bytes are a subset).
    // A start no earlier than that use is no earlier than any earlier member's: as if none.
    if (due == m.use) {
      if (i == 0) break;  // no lead, and no earlier member
      uint64_t most = 0;
      for (const ManifestEntry& e : m.rec->claim.objects) most += round_up(e.bytes, kBlockBytes);
      if (due - read_time(most) >= chain_[i - 1].use) {
        start = TimePoint::max();  // the earlier member's deadline is its use
        continue;
      }
    }
    const Duration own_time = own(*m.rec);
    if (own_time == Duration::zero()) continue;
    if (due < m.use) {
      m.rec->lead = m.use - due;
      chained_.push_back(m.rec->info.id);
      reach = std::max(reach, m.use);
    }
    start = due - own_time;
  }
  return reach;
}

}  // namespace tempokv
