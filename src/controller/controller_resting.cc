// Controller: planned claims set aside while every object of theirs is resident (TTR 0), and
// their share of an evaluation (see controller.h).
#include <algorithm>

#include "controller/controller.h"

namespace tempokv {

Controller::UseIndex& Controller::index_of(const Rec& r) {
  if (r.resting) return resting_;
  return r.held ? waiting_ : by_use_;
}

void Controller::hold(Rec& r) {
  by_use_.erase({r.index_at, r.info.id});
  waiting_.emplace(r.index_at, r.info.id);
  wait_ends_.emplace(r.wait_until, r.info.id);
  r.held = true;
  ++stats_.held;
}

void Controller::unhold(Rec& r) {
  if (!r.held) return;
  wait_ends_.erase({r.wait_until, r.info.id});
  r.held = false;
}

void Controller::release_waits(TimePoint now) {
  while (!wait_ends_.empty() && wait_ends_.begin()->first <= now) {
    Rec& r = claims_.at(wait_ends_.begin()->second);
    wait_ends_.erase(wait_ends_.begin());
    waiting_.erase({r.index_at, r.info.id});
    by_use_.emplace(r.index_at, r.info.id);
    r.held = false;
  }
}

void Controller::note_held(TimePoint horizon) {
  // The window walk notes wait_until for each waiting claim keyed inside the window (its refusal
  // cannot stand: it was never refused, and no attempt is made while it waits); the claims keyed
  // beyond it count in the walk's wake-up past the window (waiting_ there, as by_use_).
  for (const auto& [until, id] : wait_ends_) {
    if (claims_.at(id).index_at > horizon) continue;
    note_wake(until);
    return;
  }
}

void Controller::rest(Rec& r) {
  by_use_.erase({r.index_at, r.info.id});
  resting_.emplace(r.index_at, r.info.id);
  r.resting = true;
  r.rest_gen = ++rest_seq_;
  ++stats_.rested;
  for (const ManifestEntry& e : r.claim.objects) {
    ClaimsOfKey& k = resting_by_key_[e.key];
    if (k.claims.size() >= k.compact_at) {
      // Drop the entries of claims that left resting_ since (amortized: the threshold doubles
      // what is left).
      std::erase_if(k.claims, [this](const std::pair<ClaimId, uint64_t>& c) {
        const Rec* other = find(c.first);
        return !other || !other->resting || other->rest_gen != c.second;
      });
      k.compact_at = std::max<size_t>(8, 2 * k.claims.size());
    }
    k.claims.emplace_back(r.info.id, r.rest_gen);
  }
}

void Controller::unrest(Rec& r) {
  resting_.erase({r.index_at, r.info.id});
  r.resting = false;
  by_use_.emplace(r.index_at, r.info.id);
  ++stats_.unrested;
}

void Controller::on_evicted(const Key& key) {
  auto it = resting_by_key_.find(key);
  if (it == resting_by_key_.end()) return;
  std::vector<std::pair<ClaimId, uint64_t>> claims = std::move(it->second.claims);
  resting_by_key_.erase(it);
  for (const auto& [id, gen] : claims) {
    Rec* r = find(id);
    if (r && r->resting && r->rest_gen == gen) unrest(*r);
  }
}

Duration Controller::resting_laxity(const Rec& r, Duration ttu) const {
  return policy_->laxity_given(ttu, r.rank, Duration::zero(), Duration::zero(), feedback_.margin());
}

void Controller::consider_resting(Rec& r, TimePoint now, TimePoint horizon, Duration drained) {
  // What the by_use_ walk decides for a claim whose TTR is 0 (consider_timed() attempts it with
  // that TTR: nothing changes before the attempt).
  if (r.use_at > horizon) {
    note_wake(std::max(r.use_at - drained, now + Duration(1)));
    return;
  }
  if (r.use_at <= now) {
    candidates_.push_back({attempt_key(r), r.info.id, std::nullopt, false});
    return;
  }
  const Duration lax = resting_laxity(r, r.use_at - now);
  if (lax > Duration::zero()) {
    note_wake(now + lax);
    return;
  }
  candidates_.push_back({attempt_key(r), r.info.id, Duration::zero(), false});
}

void Controller::walk_resting(TimePoint now, TimePoint horizon, Duration drained) {
  for (auto it = resting_.begin(), following = it; it != resting_.end() && it->first <= horizon;
       it = following) {
    ++following;  // park() erases it
    Rec& r = claims_.at(it->second);
    if (it->first > now) {
      // Every claim from here on is used no sooner than this key (index_at <= use_at), and its
      // laxity is nondecreasing in its use time: its wake-up is at least this one's at the key.
      const Duration least = resting_laxity(r, it->first - now);
      if (least > Duration::zero()) {
        const TimePoint earliest =
            std::min(now + least, std::max(it->first - drained, now + Duration(1)));
        if (next_wake_ && earliest >= *next_wake_) break;
      }
    }
    if (r.attempted_in == eval_id_ || r.info.ordinary_only) continue;
    if (refusal_stands(r)) {
      park(r);
      continue;
    }
    consider_resting(r, now, horizon, drained);
  }
}

}  // namespace tempokv
