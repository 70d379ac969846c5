// StagingProvider's estimators: the state-aware TTR of DESIGN.md §4 and TempoKV-Static's.
#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "common/units.h"
#include "provider/staging_provider.h"
#include "provider/ttr_projection.h"

namespace tempokv {

Duration StagingProvider::ttr(const StagingClaim& claim) const {
  const uint64_t epoch = ++ttr_epoch_;
  uint64_t needed = 0;
  std::vector<PlannedRead> fresh;  // reads the claim would add, in manifest order
  std::unordered_set<Key> fresh_keys;
  for (const ManifestEntry& e : claim.objects) {
    if (tier_.resident(e.key)) continue;  // protecting a resident object is instant
    auto it = objects_.find(e.key);
    if (it != objects_.end() && it->second.read != ReadState::kNone) {
      // Covered by a read queued or in flight: it keeps that read's completion time.
      if (it->second.mark != epoch) {
        it->second.mark = epoch;
        ++needed;
      }
      continue;
    }
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
    double done = served - rec.served_at_issue;
    double remaining = std::max(0.0, static_cast<double>(rec.read_bytes) - done);
    in_flight.push_back({remaining, rec.mark == epoch});
  }
  auto queued = queue_.begin();
  size_t next_fresh = 0;
  auto next = [&]() -> std::optional<PlannedRead> {
    if (queued != queue_.end()) {
      const ObjectRec& rec = objects_.at(*queued++);
      return PlannedRead{static_cast<double>(rec.read_bytes), rec.mark == epoch};
    }
    if (next_fresh < fresh.size()) return fresh[next_fresh++];
    return std::nullopt;
  };
  double s = project_last_finish_s(in_flight, next, options_.max_reads_in_flight,
                                   rate_.bytes_per_s(), needed);
  return Duration(std::llround(s * 1e9));
}

Duration StagingProvider::ttr_bound(uint64_t extra_bytes) const {
  const double served = served_now();
  double bytes = static_cast<double>(queued_bytes_ + extra_bytes);
  for (const Key& key : in_flight_keys_) {
    const ObjectRec& rec = objects_.at(key);
    bytes += std::max(0.0, static_cast<double>(rec.read_bytes) - (served - rec.served_at_issue));
  }
  // Rounded up, with a microsecond for the rounding of ttr() itself.
  return Duration(static_cast<int64_t>(std::ceil(bytes * 1e9 / rate_.bytes_per_s())) + 1000);
}

Duration StagingProvider::drained_ttr_bound(uint64_t extra_bytes) const {
  return Duration(static_cast<int64_t>(std::ceil(static_cast<double>(extra_bytes) * 1e9 /
                                                 rate_.bytes_per_s())) +
                  1000);
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
