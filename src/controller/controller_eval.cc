// Controller: one evaluation pass over the planned claims (controller.h has the rules).
//
// Cost of an evaluation: timed policies keep planned claims in an index by
// absolute use time (ttu_at + ttu). A claim can be eligible only when its aged TTU is at most its
// TTR, and TTR <= the policy's ttr_bound() for the largest planned footprint, so only the prefix
// of the index within that window is looked at; there, a claim's own bounds settle most claims
// without a projection (StagingProvider::TtrBoundWalk::range: from the queue's prefix sums of
// bytes, O(log queue) and one lookup per object): those whose upper bound of TTR leaves laxity
// > 0 only set the wake-up, those whose lower bound already gives laxity <= 0 are attempted
// without a TTR (the provider projects one only for a commit that succeeds), and only the claims
// in between get an exact TTR (from one projection of the queue shared by the pass,
// StagingProvider::TtrWalk). Of the claims that only set the wake-up, the one with the least
// bound of laxity is projected exactly, then the next while its bound could be earlier, but only
// while that bound places it no later than the next tick (a wake-up after the tick never fires:
// the tick's evaluation replaces it). A refused claim keeps a lower bound of its own share of a
// commit's cost (StagingProvider::OwnCost: measured at each refusal, lowered by every entry of one
// of its objects into the sums, on_entry()); while that bound exceeds the budget's or the
// capacity's room its refusal stands (refusal_stands()) and it leaves the index (park(), keyed
// by that bound), so a deep window of refused claims is not stepped over at every event. Only
// the claims whose bound fits the room they wait for are looked at again (find_fitting(): after
// a release, those that could fit now, not every claim short by less than the bytes freed), and
// each only when its turn in the attempt order comes: the provider's refusal check alone
// (StagingProvider::refused_now: no store lookup, nothing committed) measures its share (a claim
// still refused is parked again at once, refused_again()), then it is walked as any claim of the
// window. The claims behind the pass's first commit, which usually takes the room they fitted,
// are not looked at in that pass. A claim found with every object
// resident (TTR 0: eligible only by its use time) leaves the index for resting_ until one of its
// objects is evicted (the tier's eviction listener), and only the resting claims that can be
// candidates or set the wake-up are looked at (walk_resting()). A claim waiting for the reads
// ahead of it (wait_for_reads_ahead), of which the walk would only note the wake-up, leaves the
// index for waiting_ until its wait ends (hold(): the earliest end inside the window is the
// wake-up, note_held()), unless it was refused before: its refusal could come to stand while it
// waits, which the walk must see to park it (holding those too was measured slower: they cycle
// between held, parked and walked). The rest is not looked at. Queue-K
// looks at the first K of each runtime's order, Demand at nothing, Immediate at every planned
// claim. ControllerOptions::full_scan evaluates every planned claim exactly instead: the reference
// the index is tested against (same decisions). What an event costs at 10,000 claims in the dense
// case (bench/controller_bench.cc): the window's ranges (their lookups per object and
// the prefix-sum searches, which start from the previous claim's answer), ttr()'s projection of
// the whole queue for the first waits' and the commits' exact TTRs (hundreds of reads, rebuilt
// after every change of the provider's state or clock), and the provider's own work; the laxity of
// a bound is CommitPolicy::laxity_given (no call through a function per bound).
//
#include <algorithm>

#include "controller/controller.h"

namespace tempokv {

Controller::AttemptKey Controller::attempt_key(const Rec& r) {
  if (r.rank == kUnranked) return {kUnranked, 0, r.seq};
  return {r.rank, r.runtime, r.seq};
}

template <typename Fn>
void Controller::for_each_in_attempt_order(uint32_t rank_limit, Fn&& fn) {
  size_t longest = 0;
  for (const auto& [runtime, order] : orders_) longest = std::max(longest, order.size());
  const size_t ranks = std::min<size_t>(longest, rank_limit);
  // Callbacks may call back in and replace an order: index each pass and re-check the claim's
  // place, so a stale slot is skipped (the evaluation runs again afterwards).
  for (size_t i = 0; i < ranks && planned_ > 0; ++i) {
    for (auto& [runtime, order] : orders_) {
      if (i >= order.size()) continue;
      Rec* r = find(order[i]);
      if (!r || r->info.state != ClaimState::kPlanned || r->runtime != runtime || r->rank != i) {
        continue;
      }
      if (!fn(*r)) return;
    }
  }
  if (rank_limit != kAnyRank || unranked_.empty()) return;
  scratch_ids_.clear();
  for (const auto& [seq, id] : unranked_) scratch_ids_.push_back(id);
  std::vector<ClaimId> ids = std::move(scratch_ids_);  // unranked_ changes as claims commit
  for (ClaimId id : ids) {
    Rec* r = find(id);
    if (!r || r->info.state != ClaimState::kPlanned || r->rank != kUnranked) continue;
    if (!fn(*r)) break;
  }
  scratch_ids_ = std::move(ids);
}

Duration Controller::ttu_horizon(Duration slack) const {
  if (!options_.ttu_horizon || !policy_->timed()) return Duration::max();
  const uint64_t footprint = planned_footprints_.empty() ? 0 : *planned_footprints_.rbegin();
  std::function<Duration()> ttr_bound = [&] { return provider_.ttr_bound(footprint); };
  std::function<Duration()> static_bound = [&] { return provider_.static_ttr_bound(footprint); };
  const Duration bound =
      policy_->ttr_bound(TtrBoundInput{ttr_bound, static_bound, feedback_.margin()});
  if (bound >= (Duration::max() - slack) / 2) return Duration::max();
  return 2 * bound + slack;
}

void Controller::evaluate_once() {
  ++stats_.evaluations;
  ++eval_id_;
  // Claims whose retrieval is requested never wait here: request_retrieval() commits them or
  // sends them down the ordinary path at once.
  next_wake_.reset();
  if (planned_ == 0) return;
  if (!policy_->timed()) {
    evaluate_untimed();
  } else if (options_.full_scan) {
    evaluate_timed_full();
  } else {
    evaluate_timed_indexed();
  }
}

void Controller::evaluate_untimed() {
  // Eligibility does not depend on staging state here, and a commit only takes budget away, so one
  // walk decides everything.
  const uint32_t limit = options_.full_scan ? kAnyRank : policy_->rank_limit();
  if (limit == 0) return;
  std::function<Duration()> ttr = [] { return Duration::zero(); };  // untimed policies ignore it
  for_each_in_attempt_order(limit, [&](Rec& r) {
    EligibilityInput in{r.use_at - executor_.now(), r.rank, ttr, ttr};
    if (policy_->eligible(in)) try_commit(r);
    return planned_ > 0;
  });
}

Duration Controller::laxity(Rec& r, TimePoint now) {
  std::function<Duration()> ttr = [&] {
    ++stats_.ttr_queries;
    return provider_.ttr(r.claim);
  };
  std::function<Duration()> static_ttr = [&] { return provider_.static_ttr(r.claim); };
  // use_at - now is the reported TTU aged by the time since it was reported (counted from its
  // deadline when a chain gives it a lead).
  EligibilityInput in{deadline(r) - now, r.rank, ttr, static_ttr, feedback_.margin()};
  return policy_->laxity(in);
}

Duration Controller::laxity_given(const Rec& r, TimePoint now, Duration ttr,
                                  Duration static_ttr) const {
  return policy_->laxity_given(deadline(r) - now, r.rank, ttr, static_ttr, feedback_.margin());
}

void Controller::note_wake(TimePoint t) {
  if (!next_wake_ || t < *next_wake_) next_wake_ = t;
}

void Controller::set_reviser(uint32_t runtime, std::function<void()> revise) {
  if (revise) {
    revisers_[runtime] = std::move(revise);
  } else {
    revisers_.erase(runtime);
  }
}

bool Controller::request_revision(const Rec& r) {
  auto it = revisers_.find(r.runtime);
  if (it == revisers_.end()) return false;
  // A revision that ran at this instant and still left a bound this close is used as it is
  // (never a loop of revisions at one virtual instant).
  auto done = revised_at_.find(r.runtime);
  if (done != revised_at_.end() && done->second == executor_.now()) return false;
  if (!revising_.insert(r.runtime).second) return true;  // one is posted already
  std::weak_ptr<int> alive = alive_;
  const uint32_t runtime = r.runtime;
  executor_.post([this, alive, runtime] {
    if (alive.expired()) return;
    revising_.erase(runtime);
    revised_at_[runtime] = executor_.now();
    auto f = revisers_.find(runtime);
    if (f != revisers_.end()) f->second();  // its update() reevaluates
  });
  return true;
}

bool Controller::consider_timed(Rec& r, TimePoint now, std::optional<Duration> known_ttr,
                                bool eligible) {
  if (r.info.ordinary_only) return false;  // no laxity makes it committable
  if (refusal_stands(r)) return false;
  if (waiting(r, now)) return false;
  // TTR >= 0, so a claim whose use time has passed has laxity <= 0 without a projection (claims
  // left behind by refusals would otherwise cost a projection of the whole queue every time).
  Duration lax = Duration::zero();
  if (eligible) {
    // Bounded at most zero by the caller, with nothing changed since.
  } else if (deadline(r) > now && known_ttr) {
    std::function<Duration()> ttr = [&] { return *known_ttr; };
    std::function<Duration()> static_ttr = [&] { return provider_.static_ttr(r.claim); };
    lax = policy_->laxity(
        EligibilityInput{deadline(r) - now, r.rank, ttr, static_ttr, feedback_.margin()});
  } else if (deadline(r) > now) {
    lax = laxity(r, now);
  }
  if (lax > Duration::zero()) {
    note_wake(now + lax);  // when its laxity would reach zero if nothing else changes
    return false;
  }
  // Eligible by a lower bound of its TTU only: the true laxity may still be positive. No commit
  // on that; the runtime projects it exactly (the controller reevaluates on that update).
  if (r.ttu_bound && request_revision(r)) return false;
  // A claim the budget refuses now is attempted (and parked); one it takes may wait.
  if (options_.wait_for_reads_ahead && policy_->state_aware() &&
      !provider_.refused_now(r.claim)) {
    if (!known_ttr) known_ttr = provider_.ttr(r.claim);
    const Duration wait = provider_.commit_wait(r.claim, *known_ttr);
    if (wait > Duration::zero()) {
      ++stats_.commit_waits;
      if (!r.waited) r.waited = Rec::WaitStart{now, *known_ttr, r.use_at};
      r.wait_until = now + wait;
      note_wake(r.wait_until);
      return false;
    }
  }
  r.attempted_in = eval_id_;  // once per evaluation: a refusal stands until something changes
  return try_commit(r, known_ttr);
}

bool Controller::waiting(const Rec& r, TimePoint now) {
  if (r.wait_until <= now) return false;
  note_wake(r.wait_until);
  return true;
}

void Controller::evaluate_timed_full() {
  const TimePoint now = executor_.now();
  bool committed = true;
  while (committed && planned_ > 0) {
    committed = false;
    next_wake_.reset();  // only the walk over the final staging state sets the wake-up
    if (options_.chain_deadlines && policy_->state_aware()) {
      StagingProvider::TtrBoundWalk bounds = provider_.ttr_bound_walk();
      chain_deadlines(bounds);
    }
    for_each_in_attempt_order(kAnyRank, [&](Rec& r) {
      if (r.attempted_in != eval_id_ && consider_timed(r, now)) committed = true;
      return !committed;
    });
  }
}

void Controller::evaluate_timed_indexed() {
  const TimePoint now = executor_.now();
  const uint64_t max_footprint = *planned_footprints_.rbegin();
  std::function<Duration()> ttr_bound = [&] { return provider_.ttr_bound(max_footprint); };
  std::function<Duration()> drained_bound = [&] {
    return provider_.drained_ttr_bound(max_footprint);
  };
  std::function<Duration()> static_bound = [&] {
    return provider_.static_ttr_bound(max_footprint);
  };
  release_waits(now);
  bool committed = true;
  while (committed && planned_ > 0) {
    committed = false;
    next_wake_.reset();
    find_fitting();
    // The window: a claim due later than now + bound has laxity > 0 whatever its exact TTR.
    const Duration bound = policy_->ttr_bound(TtrBoundInput{ttr_bound, static_bound, feedback_.margin()});
    const TimePoint horizon =
        bound >= TimePoint::max() - now ? TimePoint::max() : now + bound;
    // Inside the window, a claim's own bound (the bytes in flight, those queued for use no later
    // than it, and its own) gives a lower bound of its laxity without a projection: only claims
    // it cannot place beyond zero laxity are projected exactly now. The wake-up stays exact: the
    // skipped claims are projected in order of that lower bound only while it is earlier than the
    // earliest wake-up found so far (usually one or none).
    candidates_.clear();
    skipped_.clear();
    // The index key lags the use time a little (set_ttu): a claim keyed inside the window may be
    // used beyond it; it wakes the controller as a claim beyond the window does (below).
    const Duration drained =
        policy_->ttr_bound(TtrBoundInput{drained_bound, static_bound, feedback_.margin()});
    StagingProvider::TtrBoundWalk bounds = provider_.ttr_bound_walk();
    // A claim given a lead may be due inside the window though used (and keyed) beyond it.
    const TimePoint walk_end = std::max(horizon, chain_deadlines(bounds));
    // Claims the bound cannot settle get their exact TTR from one projection of the queue shared
    // by all of them (they come in use order), not a projection each.
    // It is made at its first use (most passes project no claim exactly; nothing changes in the
    // provider before the pass's first commit, after which it is not used).
    std::optional<StagingProvider::TtrWalk> exact;
    WalkPass pass{now, horizon, drained, bounds, exact, provider_};
    note_held(walk_end);
    auto visit = [&](Rec& r) {
      if (r.attempted_in == eval_id_ || r.info.ordinary_only) return;
      if (refusal_stands(r)) {
        park(r);
        return;
      }
      if (!r.info.refused && r.wait_until > now) {  // walk_claim() would only note its wake-up
        note_wake(r.wait_until);
        hold(r);
        return;
      }
      walk_claim(r, pass);
    };
    // Beyond the horizon the walk goes on only for the claims a chain gave a lead (walk_end), and
    // a claim there without a lead only notes a wake-up no earlier than its key less the drained
    // bound: once that is no earlier than the wake-up found, the claims after it in key order
    // change nothing but their own wake-ups, later still, and only the chained claims among them
    // are visited (a batch projected at one use time put hundreds of claims there, each stepped
    // over at every pass to note the same wake-up).
    std::optional<std::pair<TimePoint, ClaimId>> stopped;
    for (auto it = by_use_.begin(), following = it; it != by_use_.end() && it->first <= walk_end;
         it = following) {
      ++following;  // park() erases it
      Rec& r = claims_.at(it->second);
      if (it->first > horizon && r.lead == Duration::zero() && next_wake_ &&
          it->first - drained >= *next_wake_) {
        stopped = *it;
        break;
      }
      visit(r);
    }
    if (stopped) {
      for (ClaimId id : chained_) {
        Rec* r = find(id);
        if (r == nullptr || r->info.state != ClaimState::kPlanned || !r->indexed || r->resting ||
            r->held || r->parked || r->index_at > walk_end ||
            std::pair{r->index_at, r->info.id} < *stopped) {
          continue;
        }
        visit(*r);
      }
    }

    // Past the window: while reads are in service the bound falls exactly as fast as time passes
    // (the window's end stands still); once they have drained it is the drained bound and the
    // window moves with time. So the first claim beyond the window can enter it no earlier than
    // its use time minus the drained bound, and no claim beyond it can reach zero laxity before
    // entering: waking then keeps commits as exact as a full scan's without projecting it now.
    // Only a recalibration of the read rate (at a read's completion) moves the window otherwise;
    // the tick bounds how late that can make a commit.
    if (horizon != TimePoint::max()) {
      for (const auto* index : {&by_use_, &resting_, &waiting_}) {
        auto next = index->upper_bound({index == &resting_ ? horizon : walk_end, UINT64_MAX});
        if (next != index->end()) note_wake(std::max(next->first - drained, now + Duration(1)));
      }
    }
    // After every other wake-up is known, so that it stops as early as it can.
    walk_resting(now, horizon, drained);
    std::sort(candidates_.begin(), candidates_.end());
    std::vector<Candidate> walk = std::move(candidates_);
    candidates_.clear();
    // Attempts stop at the first commit, and a refusal changes nothing: each TTR walked above is
    // still the provider's ttr() when its claim is attempted. The parked claims that fit the room
    // (fitting_, in attempt order) are walked only when their turn in the attempt order comes, so
    // those behind a commit are not walked in this pass (they stay parked; the next pass finds
    // them again if they still fit).
    auto attempt = [&](const Candidate& c) {
      Rec* r = find(c.id);
      if (!r || r->info.state != ClaimState::kPlanned || r->attempted_in == eval_id_) return false;
      return consider_timed(*r, now, c.ttr, c.eligible);
    };
    size_t next_fitting = 0;
    for (size_t i = 0; i < walk.size() || next_fitting < fitting_.size();) {
      if (next_fitting == fitting_.size() ||
          (i < walk.size() && walk[i] < fitting_[next_fitting])) {
        if (attempt(walk[i++])) {
          committed = true;
          break;
        }
        continue;
      }
      Rec* r = find(fitting_[next_fitting++].id);
      if (!r || r->info.state != ClaimState::kPlanned || !r->parked) continue;
      unpark(*r);
      if (refusal_stands(*r)) {  // the room has not changed since find_fitting(): not expected
        park(*r);
        continue;
      }
      if (refused_again(*r)) continue;
      r->index_at = r->use_at;
      r->indexed = true;
      by_use_.emplace(r->use_at, r->info.id);
      walk_claim(*r, pass);
      if (candidates_.empty()) continue;
      const Candidate c = candidates_.back();
      candidates_.clear();
      if (attempt(c)) {
        committed = true;
        break;
      }
    }
    candidates_ = std::move(walk);
    if (committed) continue;  // the next pass decides the wake-up
    std::sort(skipped_.begin(), skipped_.end());
    // A wake-up later than the next tick is never reached: the tick reevaluates first, and that
    // evaluation sets the wake-up anew (schedule_wake() replaces it). So only the claims whose
    // least laxity could place a wake-up no later than the tick need their exact laxity.
    const TimePoint tick_at = tick_armed_ ? tick_at_ : now + options_.tick;
    for (const Skipped& skip : skipped_) {
      const Duration least = skip.least;
      if (next_wake_ && now + least >= *next_wake_) break;
      if (now + least > tick_at) break;
      Rec* r = find(skip.id);
      if (!r || r->info.state != ClaimState::kPlanned) continue;
      if (!skip.ranged) {
        // Skipped by the bound of its whole footprint: its range (its new reads only, or the
        // queue up to its covered reads) may place it beyond the wake-up or the tick already.
        const Duration tight =
            laxity_given(*r, now, bounds.range(r->claim).hi,
                         provider_.static_ttr_bound(r->info.footprint_bytes));
        if ((next_wake_ && now + tight >= *next_wake_) || now + tight > tick_at) continue;
      }
      // Nothing has changed since the walk began (no commit in this pass): its exact TTR is the
      // shared walk's, which answers a claim used sooner than the last one it projected by
      // ttr() (the skipped claims come in order of least laxity, not of use time).
      std::function<Duration()> ttr = [&] {
        ++stats_.ttr_queries;
        return pass.exact_walk().ttr(r->claim);
      };
      std::function<Duration()> static_ttr = [&] { return provider_.static_ttr(r->claim); };
      const Duration lax = policy_->laxity(
          EligibilityInput{deadline(*r) - now, r->rank, ttr, static_ttr, feedback_.margin()});
      note_wake(now + lax);  // > 0: at least `least`
    }
  }
}

void Controller::walk_claim(Rec& r, WalkPass& pass) {
  const TimePoint now = pass.now;
  if (waiting(r, now)) return;  // as consider_timed() decides
  if (deadline(r) > pass.horizon) {
    note_wake(std::max(deadline(r) - pass.drained, now + Duration(1)));
    // Keyed inside the window by a key lagging its use (set_ttu): re-keyed at its use, so the
    // passes that follow do not step over it again while the window has not reached it (a queue
    // projected at a lower bound keyed hundreds of claims there, walked at every pass). The
    // wake-up is the same either way: beyond the walk, the first key past it is noted.
    if (r.indexed && !r.resting && !r.held && r.index_at < r.use_at) {
      by_use_.erase({r.index_at, r.info.id});
      r.index_at = r.use_at;
      by_use_.emplace(r.index_at, r.info.id);
    }
    return;
  }
  if (deadline(r) <= now) {
    candidates_.push_back({attempt_key(r), r.info.id, std::nullopt, false});
    return;
  }
  // First the bound that needs no lookup (its whole footprint read), then the range.
  const Duration own_static = provider_.static_ttr_bound(r.info.footprint_bytes);
  Duration least =
      laxity_given(r, now, pass.bounds.bound(r.use_at, r.info.footprint_bytes), own_static);
  if (least > Duration::zero()) {
    skipped_.push_back({least, r.info.id, false});
    return;
  }
  const StagingProvider::TtrBoundWalk::Range range = pass.bounds.range(r.claim);
  if (range.all_resident) {
    // TTR 0 until one of its objects is evicted: out of by_use_ until then.
    rest(r);
    consider_resting(r, now, pass.horizon, pass.drained);
    return;
  }
  least = laxity_given(r, now, range.hi, own_static);  // only its new reads
  if (least > Duration::zero()) {
    skipped_.push_back({least, r.info.id, true});
    return;
  }
  // With the lower bounds (TTR's from the range; static TTR's 0) the laxity is at most `most`: at
  // most zero means eligible whatever the exact TTR, which the attempt then needs only if it is
  // not refused (the provider projects it then).
  const Duration most = laxity_given(r, now, range.lo, Duration::zero());
  if (most <= Duration::zero()) {
    candidates_.push_back({attempt_key(r), r.info.id, std::nullopt, true});
    return;
  }
  // No commit has happened in this pass, so this is the laxity consider_timed() would find: a
  // claim not eligible now only sets the wake-up.
  std::optional<Duration> walked;  // kept for the attempt: nothing changes before it
  std::function<Duration()> ttr = [&] {
    ++stats_.ttr_queries;
    walked = pass.exact_walk().ttr(r.claim);
    return *walked;
  };
  std::function<Duration()> static_ttr = [&] { return provider_.static_ttr(r.claim); };
  const Duration lax = policy_->laxity(
      EligibilityInput{deadline(r) - now, r.rank, ttr, static_ttr, feedback_.margin()});
  if (lax > Duration::zero()) {
    note_wake(now + lax);
    return;
  }
  candidates_.push_back({attempt_key(r), r.info.id, walked, false});
}

}  // namespace tempokv
