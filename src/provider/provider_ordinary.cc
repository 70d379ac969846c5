// The ordinary (demand) path of StagingProvider: all-or-nothing admission of ordinary claims, so
// that claims holding part of the tier never wait for room each other holds.
//
// Ordinary room is all-or-nothing: an ordinary claim holds objects and queues its demand reads
// only once everything it will occupy fits beside what is protected, reserved, pinned and owed to
// the demand reads of ordinary claims already admitted; until then it waits (first come, first
// admitted) holding nothing. So two ordinary claims can never each hold part of the tier while
// waiting for room the other holds. Commits count the room owed to admitted demand reads too.
#include <cassert>
#include <string>

#include "common/units.h"
#include "provider/staging_provider.h"

namespace tempokv {

uint64_t StagingProvider::demand_charge(const ObjectRec& rec) const {
  return rec.read == ReadState::kQueued && rec.owners.empty() ? tier_.charge_bytes(rec.read_bytes)
                                                              : 0;
}

// What admitting the claim adds to protected + reserved + pinned + owed demand: resident objects
// it would hold that nothing pins or budgets yet, and objects no read or reservation covers.
uint64_t StagingProvider::ordinary_extra_bytes(const ClaimRec& c) const {
  uint64_t extra = 0;
  for (size_t i = 0; i < c.keys.size(); ++i) {
    const FastObject* o = tier_.find(c.keys[i]);
    if (o && o->residency == Residency::kResident) {
      if (o->protect_count == 0 && !o->reserved && o->holds == 0) extra += o->charge_bytes;
      continue;
    }
    auto it = objects_.find(c.keys[i]);
    if ((it != objects_.end() && it->second.read != ReadState::kNone) || (o && o->reserved)) {
      continue;
    }
    extra += tier_.charge_bytes(round_up(c.payload_bytes[i], kBlockBytes));
  }
  return extra;
}

bool StagingProvider::ordinary_fits(uint64_t extra_bytes) const {
  const FastTierStats s = tier_.stats();
  const uint64_t occupied =
      s.protected_bytes + s.reserved_bytes + s.pinned_bytes + demand_queued_bytes_;
  return occupied + extra_bytes <= s.capacity_bytes;
}

Result<ClaimPhase> StagingProvider::start_ordinary(const StagingClaim& claim,
                                                   ReadyCallback on_ready) {
  Validated v;
  TEMPOKV_RETURN_IF_ERROR(validate_claim(claim, v, false));
  ClaimRec c;
  c.ordinary = true;
  c.keys = std::move(v.keys);
  c.payload_bytes = std::move(v.payload_bytes);
  c.generations = std::move(v.generations);
  const uint64_t extra = ordinary_extra_bytes(c);
  if (extra > tier_.options().capacity_bytes) {
    return Status::resource_exhausted("ordinary claim " + std::to_string(claim.id) + " needs " +
                                      format_bytes(extra) + ", more than the fast tier " +
                                      format_bytes(tier_.options().capacity_bytes));
  }
  ++stats_.ordinary;
  ClaimRec& rec = claims_[claim.id] = std::move(c);
  // First come, first admitted: a claim that fits does not pass one already waiting.
  if (!ordinary_waiting_.empty() || !ordinary_fits(extra)) {
    rec.admitted = false;
    rec.pending = static_cast<uint32_t>(rec.keys.size());
    rec.on_ready = std::move(on_ready);
    ordinary_waiting_.push_back(claim.id);
    return ClaimPhase::kOrdinaryReading;
  }
  admit_ordinary(claim.id, rec);
  if (rec.pending == 0) return ClaimPhase::kOrdinaryReady;
  rec.on_ready = std::move(on_ready);
  pump();
  flush_callbacks();
  return ClaimPhase::kOrdinaryReading;
}

// Holds the resident objects and queues demand reads for the rest. Does not pump.
void StagingProvider::admit_ordinary(ClaimId id, ClaimRec& c) {
  c.admitted = true;
  c.pending = 0;
  std::vector<uint64_t> bytes = std::move(c.payload_bytes);
  std::vector<uint64_t> generations = std::move(c.generations);
  c.payload_bytes.clear();
  c.generations.clear();
  for (size_t i = 0; i < c.keys.size(); ++i) {
    const Key& key = c.keys[i];
    if (tier_.use(key)) {
      Status st = tier_.hold(key);
      assert(st.is_ok());
      (void)st;
      c.held.push_back(key);
      continue;
    }
    ObjectRec& rec = object(key, bytes[i], generations[i]);
    rec.waiters.push_back({id, false});
    ++c.pending;
    enqueue(key, rec, executor_.now());  // the ordinary path needs it now
  }
}

void StagingProvider::admit_waiting_ordinary() {
  while (!ordinary_waiting_.empty()) {
    const ClaimId id = ordinary_waiting_.front();
    auto it = claims_.find(id);
    if (it == claims_.end() || it->second.admitted || it->second.draining) {
      ordinary_waiting_.pop_front();
      continue;
    }
    ClaimRec& c = it->second;
    if (!ordinary_fits(ordinary_extra_bytes(c))) return;
    ordinary_waiting_.pop_front();
    // It validated its objects when it arrived; one that changed in the store since fails it.
    Status changed;
    for (size_t i = 0; i < c.keys.size() && changed.is_ok(); ++i) {
      std::optional<ObjectInfo> info = store_.lookup(c.keys[i]);
      if (!info || info->generation != c.generations[i]) {
        changed = Status::failed_precondition(
            "ordinary claim " + std::to_string(id) + ": object " + c.keys[i].to_string() +
            " left or changed in the store while the claim waited for room");
      } else {
        changed = usable(id, c.keys[i], c.generations[i]);
      }
    }
    if (!changed.is_ok()) {
      ++stats_.changed_under_claim;
      fail_claim(id, changed);
      continue;
    }
    admit_ordinary(id, c);
    if (c.pending == 0) became_ready(id, c);
  }
}

}  // namespace tempokv
