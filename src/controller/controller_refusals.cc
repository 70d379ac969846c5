// Controller: refused claims, and the bound of their share of a commit's cost that keeps them out
// of the walk while it exceeds the room (see controller.h: refusal_stands(), park()).
#include <algorithm>

#include "controller/controller.h"

namespace tempokv {

bool Controller::refusal_stands(const Rec& r) const {
  if (!r.info.refused || r.cost_store_changes != provider_.store_index_changes()) return false;
  return static_cast<int64_t>(r.cost.budget_bytes) > provider_.budget_room() ||
         r.cost.occupied_bytes > provider_.capacity_room();
}

void Controller::park(Rec& r) {
  if (r.indexed) index_of(r).erase({r.index_at, r.info.id});
  r.indexed = false;
  r.resting = false;
  unhold(r);
  // In both sets, each by the bound of one room's share: it fits when it is in both prefixes that
  // fit, and it never moves between them as the two rooms come and go out of step.
  r.parked = true;
  r.park_budget_at = static_cast<int64_t>(r.cost.budget_bytes);
  r.park_capacity_at = r.cost.occupied_bytes;
  parked_budget_.emplace(r.park_budget_at, r.info.id);
  parked_capacity_.emplace(r.park_capacity_at, r.info.id);
  r.park_use_at = r.use_at;
  parked_by_use_.emplace(r.park_use_at, r.info.id);
}

void Controller::unpark(Rec& r) {
  if (!r.parked) return;
  parked_budget_.erase({r.park_budget_at, r.info.id});
  parked_capacity_.erase({r.park_capacity_at, r.info.id});
  parked_by_use_.erase({r.park_use_at, r.info.id});
  r.parked = false;
}

void Controller::note_cost(Rec& r) {
  r.cost = provider_.last_own_cost();
  r.cost_store_changes = provider_.store_index_changes();
  if (r.cost_gen != 0) return;  // its objects are listed already (the manifest does not change)
  r.cost_gen = ++cost_seq_;
  for (const ManifestEntry& e : r.claim.objects) {
    ClaimsOfKey& k = costed_by_key_[e.key];
    if (!k.claims.empty() && k.claims.back().first == r.info.id) continue;  // a key twice in a row
    if (k.claims.size() >= k.compact_at) {
      // Drop the entries of claims no longer planned (amortized: the threshold doubles what is
      // left). A key that enters the sums drops them too (on_entry()).
      std::erase_if(k.claims, [this](const std::pair<ClaimId, uint64_t>& c) {
        const Rec* other = find(c.first);
        return !other || other->cost_gen != c.second || other->info.state != ClaimState::kPlanned;
      });
      k.compact_at = std::max<size_t>(8, 2 * k.claims.size());
    }
    k.claims.emplace_back(r.info.id, r.cost_gen);
  }
}

void Controller::on_entry(const Key& key, uint64_t budget_bytes, uint64_t occupied_bytes) {
  auto it = costed_by_key_.find(key);
  if (it == costed_by_key_.end()) return;
  // Lowers the share of every planned claim listed with the key, and drops the entries of claims
  // no longer planned (or reported again since: another generation).
  std::erase_if(it->second.claims, [&](const std::pair<ClaimId, uint64_t>& c) {
    Rec* r = find(c.first);
    if (!r || r->cost_gen != c.second || r->info.state != ClaimState::kPlanned) return true;
    const bool parked = r->parked;
    unpark(*r);
    r->cost.budget_bytes -= std::min(r->cost.budget_bytes, budget_bytes);
    r->cost.occupied_bytes -= static_cast<int64_t>(occupied_bytes);
    if (parked) park(*r);  // the same sets, under the lowered bounds
    return false;
  });
  if (it->second.claims.empty()) costed_by_key_.erase(it);
}

bool Controller::refused_again(Rec& r) {
  if (r.ttu_bound || r.cost_store_changes != provider_.store_index_changes()) return false;
  if (!provider_.refused_now(r.claim)) return false;
  ++stats_.refused_attempts;
  note_cost(r);
  park(r);  // short of one room or both: its share is beyond that room now
  return true;
}

void Controller::find_fitting() {
  fitting_.clear();
  if (provider_.store_index_changes() != parked_store_changes_) {
    // An object has left the store: no refusal stands (a commit's store check comes first), so
    // every parked claim goes back to be attempted (and ends, or is refused and parked again).
    parked_store_changes_ = provider_.store_index_changes();
    while (!parked_budget_.empty()) {
      Rec& r = claims_.at(parked_budget_.begin()->second);
      unpark(r);
      r.index_at = r.use_at;
      r.indexed = true;
      by_use_.emplace(r.use_at, r.info.id);
    }
  }
  // A parked claim's refusal stands while its bound is beyond one room. It is listed in both sets
  // under the bound for that set's room, so the claims that fit both are in both prefixes that fit
  // (the keys up to the room): the shorter prefix is walked (both are stepped through in turn
  // until one ends), each claim in it checked against the other room.
  const int64_t budget_room = provider_.budget_room();
  const int64_t capacity_room = provider_.capacity_room();
  auto b = parked_budget_.begin(), c = parked_capacity_.begin();
  while (true) {
    if (b == parked_budget_.end() || b->first > budget_room) {
      for (auto it = parked_budget_.begin(); it != b; ++it) {
        const Rec& r = claims_.at(it->second);
        if (r.cost.occupied_bytes <= capacity_room) {
          fitting_.push_back({attempt_key(r), it->second, std::nullopt, false});
        }
      }
      break;
    }
    if (c == parked_capacity_.end() || c->first > capacity_room) {
      for (auto it = parked_capacity_.begin(); it != c; ++it) {
        const Rec& r = claims_.at(it->second);
        if (static_cast<int64_t>(r.cost.budget_bytes) <= budget_room) {
          fitting_.push_back({attempt_key(r), it->second, std::nullopt, false});
        }
      }
      break;
    }
    ++b;
    ++c;
  }
  std::sort(fitting_.begin(), fitting_.end());
}

Status Controller::check_refusal_bounds() {
  for (auto& [id, r] : claims_) {
    if (r.info.state != ClaimState::kPlanned || !r.info.refused ||
        r.cost_store_changes != provider_.store_index_changes()) {
      continue;
    }
    const bool stands = refusal_stands(r);
    const bool refused = provider_.refused_now(r.claim);
    const StagingProvider::OwnCost share = provider_.last_own_cost();
    if (r.cost.budget_bytes > share.budget_bytes || r.cost.occupied_bytes > share.occupied_bytes ||
        (stands && !refused)) {
      return Status::internal(
          "claim " + std::to_string(id) + ": bound of its share " +
          std::to_string(r.cost.budget_bytes) + " / " + std::to_string(r.cost.occupied_bytes) +
          " bytes, share " + std::to_string(share.budget_bytes) + " / " +
          std::to_string(share.occupied_bytes) + ", refusal " +
          (stands ? "stands" : "not standing") +
          ", refused now: " + (refused ? "yes" : "no"));
    }
  }
  return Status::ok();
}

}  // namespace tempokv
