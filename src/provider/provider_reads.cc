// The read path of StagingProvider: issuing queued reads into fast-tier memory and completing
// them (readiness, protection, failure).
#include <algorithm>
#include <cassert>
#include <cmath>
#include <string>

#include "provider/staging_provider.h"

namespace tempokv {

uint32_t StagingProvider::seen_writes_in_flight() const {
  return static_cast<uint32_t>(options_.write_cost > 0 ? writes_in_flight_ : 0);
}

uint32_t StagingProvider::device_in_flight() const {
  return static_cast<uint32_t>(in_flight_keys_.size()) + seen_writes_in_flight();
}

double StagingProvider::served_now() const {
  if (in_flight_keys_.empty()) return served_;
  return served_ + rate_.bytes_per_s() * to_seconds(executor_.now() - fluid_last_) /
                       static_cast<double>(device_in_flight());
}

// Call before the number of reads (or seen writes) in flight changes: closes the interval that ran
// at the old number, for both the fluid model and the busy-time calibration.
void StagingProvider::note_in_flight_change() {
  ++state_version_;
  served_ = served_now();
  fluid_last_ = executor_.now();
  rate_.advance(fluid_last_, static_cast<uint32_t>(in_flight_keys_.size()),
                seen_writes_in_flight());
}

void StagingProvider::on_store_write(uint64_t bytes, bool started) {
  if (!started && writes_in_flight_ == 0) return;  // issued before this provider listened
  note_in_flight_change();
  if (started) {
    ++writes_in_flight_;
    write_bytes_in_flight_ += bytes;
    return;
  }
  --writes_in_flight_;
  write_bytes_in_flight_ -= std::min(bytes, write_bytes_in_flight_);
  rate_.add_completed_write(bytes);
}

double StagingProvider::write_ahead_s() const {
  if (write_bytes_in_flight_ == 0) return 0.0;
  return static_cast<double>(write_bytes_in_flight_) * rate_.write_cost() / rate_.bytes_per_s();
}

double StagingProvider::bound_scale() const { return 1.0 + background_writes(); }

double StagingProvider::background_writes() const {
  return std::min(rate_.writes_while_reading(), static_cast<double>(options_.max_reads_in_flight));
}

void StagingProvider::pump() {
  if (pumping_) {
    repump_ = true;
    return;
  }
  pumping_ = true;
  do {
    repump_ = false;
    admit_waiting_ordinary();
    // Choose first, then issue: a store callback that runs at once may change the queue.
    std::vector<Key> chosen;
    // Room for a fill only shrinks as this pass fills, and a larger fill of the same kind (reserved
    // by a committed claim, or not) needs at least the room a smaller one lacked: once one fails,
    // the larger ones behind it wait without asking the tier (each ask may plan an eviction).
    uint64_t failed_bytes[2] = {UINT64_MAX, UINT64_MAX};  // [reserved]
    for (auto it = queue_.begin(); it != queue_.end() && in_flight_keys_.size() + chosen.size() <
                                                             options_.max_reads_in_flight;) {
      const Key key = it->second.key;
      ObjectRec& rec = *it->second.rec;
      uint64_t& failed = failed_bytes[rec.owners.empty() ? 0 : 1];
      if (rec.read_bytes >= failed) {
        ++it;  // no room yet: it waits in place
        continue;
      }
      entries_muted_ = demand_charge(rec) > 0;  // the fill takes the room owed to the read
      const bool filling = tier_.begin_fill(key, rec.read_bytes).is_ok();
      entries_muted_ = false;
      if (!filling) {
        failed = std::min(failed, rec.read_bytes);
        ++it;
        continue;
      }
      demand_queued_bytes_ -= demand_charge(rec);  // now pinned by its fill: nothing freed
      rec.read = ReadState::kInFlight;
      chosen.push_back(key);
      queued_bytes_ -= rec.read_bytes;
      ++state_version_;
      it = queue_erase(it);
    }
    for (const Key& key : chosen) issue(key);
  } while (repump_);
  pumping_ = false;
}

void StagingProvider::issue(const Key& key) {
  ObjectRec& rec = objects_.at(key);
  note_in_flight_change();
  rec.served_at_issue = served_;
  // get() reads the object the index holds now: its generation is what lands in the tier.
  std::optional<ObjectInfo> info = store_.lookup(key);
  rec.read_generation = info ? info->generation : 0;
  in_flight_keys_.push_back(key);
  ++stats_.reads_issued;
  if (rec.owners.empty()) ++stats_.demand_reads;
  std::weak_ptr<int> alive = alive_;
  store_.get(key, tier_.data(key), rec.read_bytes, [this, alive, key](Result<size_t> r) {
    if (alive.expired()) return;
    on_read_done(key, std::move(r));
  });
}

void StagingProvider::on_read_done(const Key& key, Result<size_t> result) {
  auto rit = objects_.find(key);
  assert(rit != objects_.end() && rit->second.read == ReadState::kInFlight);
  note_in_flight_change();
  in_flight_keys_.erase(std::find(in_flight_keys_.begin(), in_flight_keys_.end(), key));
  ObjectRec& rec = rit->second;
  rec.read = ReadState::kNone;
  Status status = result.status();
  if (result.is_ok() && *result != rec.payload_bytes) {
    status = Status::io_error("short read of " + key.to_string() + ": " + std::to_string(*result) +
                              " of " + std::to_string(rec.payload_bytes) + " bytes");
  }
  if (status.is_ok() && rec.read_generation != rec.generation) {
    // Put again with other bytes after its claims validated it: those bytes are not theirs.
    ++stats_.changed_under_claim;
    status = Status::failed_precondition(
        "object " + key.to_string() + " changed in the store (generation " +
        std::to_string(rec.read_generation) + ") while generation " +
        std::to_string(rec.generation) + " was staged");
  }
  bool ok = status.is_ok();
  tier_.end_fill(key, ok, rec.read_generation);
  std::vector<Member> owners = std::move(rec.owners);
  std::vector<Member> waiters = std::move(rec.waiters);
  rec.owners.clear();
  rec.waiters.clear();
  if (ok) {
    rate_.add_completed_read(rec.read_bytes);
    stats_.bytes_read += rec.payload_bytes;
    for (const Member& m : owners) {
      if (!m.draining) rec.owners.push_back(m);
    }
    // The reservation becomes one protection per live owner.
    if (rec.owners.empty() && !owners.empty()) tier_.unreserve(key);
    for (size_t i = 0; i < rec.owners.size(); ++i) {
      Status st = tier_.protect(key);
      assert(st.is_ok() && "a reserved object's protection is already in the budget");
      (void)st;
    }
    std::vector<ClaimId> live_owners;
    for (const Member& m : rec.owners) live_owners.push_back(m.claim);
    maybe_forget(key);  // rec may be gone from here on
    for (ClaimId id : live_owners) {
      ClaimRec& c = claims_.at(id);
      if (--c.pending == 0) became_ready(id, c);
    }
    for (const Member& m : waiters) {
      if (m.draining) continue;
      ClaimRec& c = claims_.at(m.claim);
      Status st = tier_.hold(key);
      assert(st.is_ok());
      (void)st;
      c.held.push_back(key);
      if (--c.pending == 0) became_ready(m.claim, c);
    }
  } else {
    ++stats_.read_errors;
    if (!owners.empty()) tier_.unreserve(key);
    maybe_forget(key);
    Status failure(status.code(),
                   "staging read of " + key.to_string() + " failed: " + status.message());
    for (const auto* list : {&owners, &waiters}) {
      for (const Member& m : *list) {
        if (!m.draining) fail_claim(m.claim, failure);
      }
    }
  }
  for (const auto* list : {&owners, &waiters}) {
    for (const Member& m : *list) {
      if (m.draining) finish_draining(m.claim);
    }
  }
  pump();
  flush_callbacks();
}

}  // namespace tempokv
