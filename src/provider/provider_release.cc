// How StagingProvider claims end: transfers, release, cancel, draining and failure.
#include <algorithm>
#include <cassert>
#include <string>

#include "provider/staging_provider.h"

namespace tempokv {

Status StagingProvider::begin_transfer(ClaimId id) {
  auto it = claims_.find(id);
  if (it == claims_.end()) return Status::not_found("claim " + std::to_string(id) + " is unknown");
  ClaimRec& c = it->second;
  if (c.draining || c.pending > 0) {
    return Status::failed_precondition("claim " + std::to_string(id) + " is not ready (" +
                                       std::string(claim_phase_name(*phase(id))) + ")");
  }
  ++c.transfers;
  return Status::ok();
}

Status StagingProvider::end_transfer(ClaimId id) {
  auto it = claims_.find(id);
  if (it == claims_.end() || it->second.transfers == 0) {
    return Status::failed_precondition("claim " + std::to_string(id) + " has no transfer");
  }
  ClaimRec& c = it->second;
  if (--c.transfers == 0 && c.draining) {
    retire(id, c);
    maybe_erase_claim(id);
    pump();
    flush_callbacks();
  }
  return Status::ok();
}

Status StagingProvider::release_object(ClaimId id, const Key& key) {
  auto it = claims_.find(id);
  if (it == claims_.end()) return Status::not_found("claim " + std::to_string(id) + " is unknown");
  ClaimRec& c = it->second;
  if (c.transfers == 0 || c.draining) {
    return Status::failed_precondition("release_object: claim " + std::to_string(id) +
                                       " is not transferring");
  }
  auto k = std::find(c.keys.begin(), c.keys.end(), key);
  if (k == c.keys.end()) {
    return Status::not_found("release_object: claim " + std::to_string(id) + " does not hold " +
                             key.to_string());
  }
  c.keys.erase(k);
  if (c.ordinary) {
    auto h = std::find(c.held.begin(), c.held.end(), key);
    if (h != c.held.end()) {
      c.held.erase(h);
      tier_.unhold(key);
    }
  }
  drop_member(key, id, c.ordinary);
  pump();  // room may have opened for waiting demand reads
  flush_callbacks();
  return Status::ok();
}

Status StagingProvider::release(ClaimId id) {
  auto it = claims_.find(id);
  if (it == claims_.end()) return Status::not_found("claim " + std::to_string(id) + " is unknown");
  if (it->second.draining) {
    return Status::failed_precondition("claim " + std::to_string(id) + " is already released");
  }
  if (it->second.pending > 0) {
    return Status::failed_precondition("claim " + std::to_string(id) +
                                       " still has reads pending; cancel it instead");
  }
  ++stats_.releases;
  end_claim(id, it->second);
  return Status::ok();
}

Status StagingProvider::cancel(ClaimId id) {
  auto it = claims_.find(id);
  if (it == claims_.end()) return Status::not_found("claim " + std::to_string(id) + " is unknown");
  if (it->second.draining) {
    return Status::failed_precondition("claim " + std::to_string(id) + " is already released");
  }
  ++stats_.cancels;
  end_claim(id, it->second);
  return Status::ok();
}

void StagingProvider::end_claim(ClaimId id, ClaimRec& c) {
  if (!c.admitted) ordinary_waiting_.remove(id);
  c.draining = true;
  c.on_ready = nullptr;
  if (c.transfers == 0) retire(id, c);
  maybe_erase_claim(id);
  pump();
  flush_callbacks();
}

// Lets go of every object of the claim: protection and holds end now, except on objects whose
// read is in flight, where the claim stays a draining member until the read completes.
void StagingProvider::retire(ClaimId id, ClaimRec& c) {
  if (c.retired) return;
  c.retired = true;
  for (const Key& key : c.held) tier_.unhold(key);
  c.held.clear();
  for (const Key& key : c.keys) drop_member(key, id, c.ordinary);
}

void StagingProvider::drop_member(const Key& key, ClaimId id, bool ordinary) {
  auto it = objects_.find(key);
  if (it == objects_.end()) return;
  ObjectRec& rec = it->second;
  std::vector<Member>& members = ordinary ? rec.waiters : rec.owners;
  auto m =
      std::find_if(members.begin(), members.end(), [id](const Member& x) { return x.claim == id; });
  if (m == members.end() || m->draining) return;
  if (rec.read == ReadState::kInFlight) {
    m->draining = true;
    ++claims_[id].draining_reads;
    return;
  }
  const uint64_t owed_before = demand_charge(rec);
  members.erase(m);
  const uint64_t owed_after = demand_charge(rec);
  demand_queued_bytes_ = demand_queued_bytes_ - owed_before + owed_after;
  if (owed_after < owed_before) demand_freed_bytes_ += owed_before - owed_after;
  // Owed more: its last owner left a queued read to waiters, and it is unreserved below; a claim's
  // share for it (OwnCost) stays as it was, so this is no entry.
  if (!ordinary) {
    if (tier_.resident(key)) {
      tier_.unprotect(key);
    } else if (rec.owners.empty()) {
      tier_.unreserve(key);
    }
  }
  maybe_forget(key);
}

// Forgets an object nobody needs: dequeues its read if it was not issued.
void StagingProvider::maybe_forget(const Key& key) {
  auto it = objects_.find(key);
  if (it == objects_.end()) return;
  ObjectRec& rec = it->second;
  if (!rec.owners.empty() || !rec.waiters.empty()) return;
  if (rec.read == ReadState::kInFlight) return;
  if (rec.fetching) return;  // until it lands (on_fetch_done): a later claim joins that fetch
  if (rec.read == ReadState::kQueued) {
    const uint64_t owed = demand_charge(rec);
    demand_queued_bytes_ -= owed;
    demand_freed_bytes_ += owed;
    queued_bytes_ -= rec.read_bytes;
    queue_erase(rec.queue_pos);
    ++state_version_;
  }
  objects_.erase(it);
}

void StagingProvider::maybe_erase_claim(ClaimId id) {
  auto it = claims_.find(id);
  if (it == claims_.end()) return;
  const ClaimRec& c = it->second;
  if (c.draining && c.retired && c.transfers == 0 && c.draining_reads == 0) claims_.erase(it);
}

void StagingProvider::finish_draining(ClaimId id) {
  auto it = claims_.find(id);
  assert(it != claims_.end() && it->second.draining_reads > 0);
  --it->second.draining_reads;
  maybe_erase_claim(id);
}

void StagingProvider::fail_claim(ClaimId id, const Status& status) {
  auto it = claims_.find(id);
  if (it == claims_.end() || it->second.draining) return;
  ClaimRec& c = it->second;
  ++stats_.failed;
  if (c.on_ready) {
    callbacks_.push_back({std::move(c.on_ready), {id, status}});
    c.on_ready = nullptr;
  }
  c.draining = true;
  retire(id, c);
  maybe_erase_claim(id);
}

void StagingProvider::became_ready(ClaimId id, ClaimRec& c) {
  if (!c.ordinary) ++stats_.staged;
  if (c.on_ready) {
    callbacks_.push_back({std::move(c.on_ready), {id, Status::ok()}});
    c.on_ready = nullptr;
  }
}

}  // namespace tempokv
