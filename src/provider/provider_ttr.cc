// StagingProvider's estimators: the state-aware TTR of DESIGN.md §4 and the fixed-rate one (tempokv-no-state-ttr).
#include <algorithm>
#include <cmath>
#include <queue>
#include <limits>
#include <unordered_set>

#include "common/units.h"
#include "provider/staging_provider.h"
#include "provider/ttr_projection.h"

namespace tempokv {
Duration StagingProvider::ttr_reference(const StagingClaim& claim) const {
  const uint64_t epoch = ++ttr_epoch_;
  const TimePoint use_at = use_time(claim);
  uint64_t needed = 0;
  std::vector<PlannedRead> fresh;  // reads the claim would add, in manifest order
  std::unordered_set<Key> fresh_keys;
  for (const ManifestEntry& e : claim.objects) {
    if (tier_.resident(e.key)) continue;  // protecting a resident object is instant
    if (const ObjectRec* rec = covered_read(e.key, use_at)) {
      // Covered by a read in flight or queued ahead: it keeps that read's completion time.
      if (rec->mark != epoch) {
        rec->mark = epoch;
        ++needed;
      }
      continue;
    }
    // Not covered, or queued for a claim used later (committing this one moves it up to here).
    if (fresh_keys.insert(e.key).second) {
      fresh.push_back({static_cast<double>(round_up(e.bytes, kBlockBytes)), true});
      ++needed;
    }
  }
  if (needed == 0) return Duration::zero();

  const double served = served_now();
  std::vector<PlannedRead> in_flight;
  in_flight.reserve(in_flight_keys_.size());
  for (const Key& key : in_flight_keys_) {
    const ObjectRec& rec = objects_.at(key);
    in_flight.push_back({rec.left_bytes(served), rec.mark == epoch});
  }
  // The queued reads used no later than this claim go first.
  auto queued = queue_.begin();
  const auto queued_end = queue_.upper_bound({use_at, UINT64_MAX});
  size_t next_fresh = 0;
  auto next = [&]() -> std::optional<PlannedRead> {
    if (queued != queued_end) {
      const ObjectRec& rec = *(queued++)->second.rec;
      return PlannedRead{static_cast<double>(rec.read_bytes), rec.mark == epoch};
    }
    if (next_fresh < fresh.size()) return fresh[next_fresh++];
    return std::nullopt;
  };
  double s = project_last_finish_s(std::move(in_flight), next, options_.max_reads_in_flight,
                                   rate_.bytes_per_s(), needed, background_writes());
  return Duration(std::llround((s + write_ahead_s()) * 1e9)) + remote_extra(claim);
}

bool StagingProvider::snapshot_current() const {
  return snap_.version == state_version_ && snap_.at == executor_.now();
}

// The reads in service share the rate equally; the projection tracks `served`, the progress every
// read in service has received, and orders reads by the progress at which they finish (as
// project_last_finish_s does, with the same arithmetic, so ttr() equals ttr_reference()).

const StagingProvider::TtrSnapshot& StagingProvider::ttr_snapshot() const {
  const TimePoint now = executor_.now();
  if (snapshot_current()) return snap_;
  ++snap_builds_;
  const uint64_t version = state_version_;
  const double rate = rate_.bytes_per_s();
  const double background = background_writes();
  const double served_now_bytes = served_now();
  // The reads in service, ascending by (finish progress, read) from `first` on: the first leaves
  // service next, and a read joins behind those that finish no later (with one read size, at the
  // back). They leave in the order a heap would give (a strict order), with the same arithmetic;
  // this runs over the whole queue, hundreds of reads deep in the dense case, at every state.
  using Active = std::pair<double, const ObjectRec*>;
  std::vector<Active>& active = snap_scratch_;
  active.clear();
  size_t first = 0;
  auto join = [&](Active a) {
    active.push_back(a);
    for (size_t i = active.size() - 1; i > first && a < active[i - 1]; --i) {
      std::swap(active[i], active[i - 1]);
    }
  };
  for (const Key& key : in_flight_keys_) {
    const ObjectRec& rec = objects_.at(key);
    join({rec.left_bytes(served_now_bytes), &rec});
  }
  auto queued = queue_.begin();
  double served = 0, t = 0;
  auto refill = [&] {  // true when the queue ran out with a slot free
    while (active.size() - first < options_.max_reads_in_flight) {
      if (queued == queue_.end()) return true;
      const ObjectRec& rec = *(queued++)->second.rec;
      join({served + static_cast<double>(rec.read_bytes), &rec});
    }
    return false;
  };
  while (!refill()) {
    const Active top = active[first++];
    double n = static_cast<double>(active.size() - first + 1) + background;
    if (top.first > served) {
      t += (top.first - served) * n / rate;
      served = top.first;
    }
    top.second->snap_finish_s = t;
    top.second->snap_version = version;
    if (first >= 64) {  // keep the buffer short: drop the reads that left service
      active.erase(active.begin(), active.begin() + static_cast<std::ptrdiff_t>(first));
      first = 0;
    }
  }
  snap_.active.assign(active.begin() + static_cast<std::ptrdiff_t>(first), active.end());
  for (const auto& [finish, rec] : snap_.active) {
    rec->snap_finish_s = std::numeric_limits<double>::quiet_NaN();
    rec->snap_version = version;
  }
  snap_.version = version;
  snap_.at = now;
  snap_.served = served;
  snap_.t = t;
  return snap_;
}

Duration StagingProvider::ttr(const StagingClaim& claim) const {
  // The shared projection holds when every queued read goes before this claim's new ones (it is
  // used no sooner than any of them); otherwise only part of the queue is ahead of it.
  if (!queue_.empty() && queue_.rbegin()->first.first > use_time(claim)) {
    return ttr_reference(claim);
  }
  const TtrSnapshot& snap = ttr_snapshot();
  const uint64_t epoch = ++ttr_epoch_;
  uint64_t in_service = 0;  // needed reads still in service where the queue runs out
  double covered_s = 0;     // latest finish of needed reads that end before that
  bool needed = false;
  // Bytes of the reads the claim would add, in manifest order, and their keys (reused scratch:
  // no allocation per call; the runtime adapter asks this for the requests ahead at every step).
  std::vector<double>& fresh = ttr_fresh_;
  std::vector<Key>& fresh_keys = ttr_fresh_keys_;
  fresh.clear();
  fresh_keys.clear();
  for (const ManifestEntry& e : claim.objects) {
    if (tier_.resident(e.key)) continue;
    auto it = objects_.find(e.key);
    if (it != objects_.end() && it->second.read != ReadState::kNone) {
      const ObjectRec& rec = it->second;
      if (rec.mark == epoch) continue;
      rec.mark = epoch;
      needed = true;
      if (std::isnan(rec.snap_finish_s)) {
        ++in_service;
      } else {
        covered_s = std::max(covered_s, rec.snap_finish_s);
      }
      continue;
    }
    fresh.push_back(static_cast<double>(round_up(e.bytes, kBlockBytes)));
    fresh_keys.push_back(e.key);
    needed = true;
  }
  if (fresh_keys.size() > 1) {
    // A key twice in the manifest is read once (ttr_reference's set); rare, so answered there.
    std::sort(fresh_keys.begin(), fresh_keys.end());
    if (std::adjacent_find(fresh_keys.begin(), fresh_keys.end()) != fresh_keys.end()) {
      return ttr_reference(claim);
    }
  }
  if (!needed) return Duration::zero();
  double last = covered_s;
  uint64_t left = in_service + fresh.size();
  if (left > 0) {
    // From where the queue runs out: the reads still in service and the claim's new reads.
    std::vector<PlannedRead>& heap = ttr_heap_;
    heap.clear();
    for (const auto& [finish, rec] : snap.active) heap.push_back({finish, rec->mark == epoch});
    last = continue_projection_s(heap, {snap.served, snap.t}, last, fresh_reads(fresh),
                                 options_.max_reads_in_flight, rate_.bytes_per_s(), left,
                                 background_writes());
  }
  return Duration(std::llround((last + write_ahead_s()) * 1e9)) + remote_extra(claim);
}

Duration StagingProvider::ttr_bound(uint64_t extra_bytes) const {
  const double served = served_now();
  double bytes = static_cast<double>(queued_bytes_ + extra_bytes) +
                 static_cast<double>(write_bytes_in_flight_) * rate_.write_cost();
  for (const Key& key : in_flight_keys_) bytes += objects_.at(key).left_bytes(served);
  // Rounded up, with a microsecond for the rounding of ttr() itself.
  return Duration(
             static_cast<int64_t>(std::ceil(bytes * bound_scale() * 1e9 / rate_.bytes_per_s())) +
             1000) +
         remote_bound(extra_bytes);
}

Duration StagingProvider::drained_ttr_bound(uint64_t extra_bytes) const {
  return Duration(static_cast<int64_t>(std::ceil(static_cast<double>(extra_bytes) * 1e9 /
                                                 rate_.bytes_per_s())) +
                  1000) +
         remote_bound(extra_bytes);
}

Duration StagingProvider::static_ttr(const StagingClaim& claim) const {
  std::unordered_set<Key> seen;
  uint64_t bytes = 0;
  for (const ManifestEntry& e : claim.objects) {
    if (tier_.resident(e.key) || !seen.insert(e.key).second) continue;
    bytes += round_up(e.bytes, kBlockBytes);
  }
  return Duration(
      std::llround(static_cast<double>(bytes) * 1e9 / options_.static_read_bytes_per_s));
}

Duration StagingProvider::static_ttr_bound(uint64_t bytes) const {
  // Rounded up, with a microsecond for the rounding of static_ttr() itself.
  return Duration(static_cast<int64_t>(std::ceil(static_cast<double>(bytes) * 1e9 /
                                                 options_.static_read_bytes_per_s)) +
                  1000);
}

}  // namespace tempokv
