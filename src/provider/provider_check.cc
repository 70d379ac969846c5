// StagingProvider::check_invariants: the header's invariants, checked against the fast tier.
#include <algorithm>
#include <string>
#include <unordered_map>

#include "provider/staging_provider.h"

namespace tempokv {

Status StagingProvider::check_invariants() const {
  TEMPOKV_RETURN_IF_ERROR(tier_.check_invariants());
  uint64_t queue_bytes = 0;
  for (const auto& [pos, queued] : queue_) {
    const Key& key = queued.key;
    const ObjectRec& rec = objects_.at(key);
    queue_bytes += rec.read_bytes;
    if (queued.rec != &rec || rec.read != ReadState::kQueued || rec.queue_pos->first != pos) {
      return Status::internal(key.to_string() + ": queued at a place its record disagrees with");
    }
  }
  if (queue_bytes != queued_bytes_) {
    return Status::internal("queued_bytes_ is " + std::to_string(queued_bytes_) +
                            " but the queue holds " + std::to_string(queue_bytes));
  }
  uint64_t demand = 0;
  for (const auto& [pos, queued] : queue_) demand += demand_charge(*queued.rec);
  if (demand != demand_queued_bytes_) {
    return Status::internal("demand_queued_bytes_ is " + std::to_string(demand_queued_bytes_) +
                            " but queued unreserved reads charge " + std::to_string(demand));
  }
  std::unordered_map<Key, uint32_t> holds;  // expected fast-tier holds per object
  for (const auto& [id, c] : claims_) {
    for (const Key& key : c.held) ++holds[key];
    if (c.retired && !c.held.empty()) {
      return Status::internal("retired claim " + std::to_string(id) + " still holds objects");
    }
    if (!c.draining && !c.ordinary) {
      uint32_t missing = 0;
      for (const Key& key : c.keys) missing += tier_.resident(key) ? 0 : 1;
      if (missing != c.pending) {
        return Status::internal("claim " + std::to_string(id) + " pending " +
                                std::to_string(c.pending) + " but " + std::to_string(missing) +
                                " objects are not resident");
      }
    }
  }
  for (const auto& [key, rec] : objects_) {
    std::string k = key.to_string();
    const FastObject* o = tier_.find(key);
    bool resident = o && o->residency == Residency::kResident;
    size_t draining = 0;
    for (const Member& m : rec.owners) {
      auto c = claims_.find(m.claim);
      if (c == claims_.end() || c->second.ordinary) {
        return Status::internal(k + ": owner " + std::to_string(m.claim) +
                                " is not a committed claim");
      }
      if (m.draining != c->second.draining) {
        return Status::internal(k + ": owner " + std::to_string(m.claim) + " draining mismatch");
      }
      draining += m.draining ? 1 : 0;
    }
    if (draining > 0 && rec.read != ReadState::kInFlight) {
      return Status::internal(k + ": draining owners without a read in flight");
    }
    if (resident && o->generation != rec.generation) {
      return Status::internal(k + ": the tier holds generation " + std::to_string(o->generation) +
                              ", its claims validated " + std::to_string(rec.generation));
    }
    if (resident) {
      if (o->protect_count != rec.owners.size()) {
        return Status::internal(k + ": protect count " + std::to_string(o->protect_count) +
                                " but " + std::to_string(rec.owners.size()) + " owners");
      }
    } else {
      bool reserved = o && o->reserved;
      if (reserved != !rec.owners.empty()) {
        return Status::internal(k + ": reserved flag disagrees with its owners");
      }
    }
    if (rec.fetching && (rec.read != ReadState::kNone || resident || !rec.waiters.empty() ||
                         rec.generation != kNotStoredYet)) {
      return Status::internal(k + ": fetched from the remote source while read, resident or "
                                  "waited for on the ordinary path");
    }
    if (!rec.waiters.empty() && rec.read == ReadState::kNone) {
      return Status::internal(k + ": ordinary claims wait without a read");
    }
    if (rec.owners.empty() && rec.waiters.empty() && rec.read != ReadState::kInFlight &&
        !rec.fetching) {
      return Status::internal(k + ": tracked while nobody needs it");
    }
    bool in_flight =
        std::find(in_flight_keys_.begin(), in_flight_keys_.end(), key) != in_flight_keys_.end();
    if (in_flight != (rec.read == ReadState::kInFlight)) {
      return Status::internal(k + ": in-flight list disagrees");
    }
    if (rec.read == ReadState::kQueued && resident) {
      // TtrBoundWalk::range() relies on it: a queued read is for an object not resident.
      return Status::internal(k + ": read queued for a resident object");
    }
    if (in_flight != (o && o->residency == Residency::kFilling)) {
      return Status::internal(k +
                              ": read in flight but the tier is not filling it (or the reverse)");
    }
  }
  size_t queued = 0;
  for (const auto& [key, rec] : objects_) queued += rec.read == ReadState::kQueued ? 1 : 0;
  if (queued != queue_.size()) return Status::internal("queue length disagrees with the objects");
  Status result = Status::ok();
  tier_.for_each([&](const Key& key, const FastObject& o) {
    if (!result.is_ok()) return;
    if ((o.protect_count > 0 || o.reserved) && objects_.count(key) == 0) {
      result = Status::internal(key.to_string() + ": protected or reserved without an owner");
    }
    auto h = holds.find(key);
    uint32_t expected = h == holds.end() ? 0 : h->second;
    if (o.holds != expected) {
      result = Status::internal(key.to_string() + ": " + std::to_string(o.holds) +
                                " holds, claims account for " + std::to_string(expected));
    }
  });
  return result;
}

}  // namespace tempokv
