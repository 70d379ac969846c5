// StagingProvider and the remote source (remote_source.h): claims on objects the store lacks and
// a remote tier holds are staged in two stages. The first, prefetch(), fetches the object into the
// store and reserves nothing; the second, the commit, reserves fast-tier room and reads it from the
// store (joining the fetch when it has not landed yet). ttr() counts the remote part only for
// objects whose fetch has not started, so the laxity rule times each stage by its own path: the
// first by remote + write + read, the second by write + read. A commit of a claim whose fetches
// were never started (no prefetch) starts them itself, as its staging's first step.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <string>

#include "common/units.h"
#include "provider/staging_provider.h"
#include "store/format.h"

namespace tempokv {

namespace {

// The bytes the store writes for an object: its record (a header block and the payload in blocks).
uint64_t record_bytes(uint64_t payload_bytes) {
  return store::kHeaderBytes + round_up(payload_bytes, kBlockBytes);
}

// The time the store's write of `bytes` takes at the calibrated read rate: the device time of a
// byte written in bytes read (ProviderOptions::write_cost; 1 when writes are not seen, a write
// still takes the device's time).
double write_s(uint64_t bytes, double write_cost, double bytes_per_s) {
  return static_cast<double>(bytes) * (write_cost > 0 ? write_cost : 1.0) / bytes_per_s;
}

}  // namespace

bool StagingProvider::remote_only(const Key& key) const {
  return remote_ != nullptr && !store_.contains(key) && remote_->holds(key);
}

Duration StagingProvider::remote_extra(const StagingClaim& claim) const {
  if (remote_ == nullptr) return Duration::zero();
  std::vector<RemoteSource::Object>& objects = remote_scratch_;
  objects.clear();
  uint64_t new_bytes = 0;    // of fetches it would start
  uint64_t write_bytes = 0;  // the store's records of every object of it still to be fetched
  for (const ManifestEntry& e : claim.objects) {
    if (tier_.resident(e.key)) continue;
    auto it = objects_.find(e.key);
    const bool fetching = it != objects_.end() && it->second.fetching;
    if (!fetching && !remote_only(e.key)) continue;
    if (std::any_of(objects.begin(), objects.end(),
                    [&](const RemoteSource::Object& o) { return o.key == e.key; }) ||
        std::any_of(fetched_scratch_.begin(), fetched_scratch_.end(),
                    [&](const Key& k) { return k == e.key; })) {
      continue;
    }
    write_bytes += record_bytes(e.bytes);
    if (fetching) {  // its wait is the first stage's: a commit cannot hasten it
      fetched_scratch_.push_back(e.key);
      continue;
    }
    objects.push_back({e.key, e.bytes});
    new_bytes += e.bytes;
  }
  fetched_scratch_.clear();
  if (write_bytes == 0) return Duration::zero();
  const Duration write =
      Duration(std::llround(write_s(write_bytes, rate_.write_cost(), rate_.bytes_per_s()) * 1e9));
  if (objects.empty()) return write;
  // A node held unhealthy: the bound (finite, as the controller's bounds assume); commit()
  // refuses the claim while the hold lasts.
  return remote_->ttr(objects).value_or(remote_->ttr_bound(new_bytes)) + write;
}

Duration StagingProvider::remote_bound(uint64_t bytes) const {
  if (remote_ == nullptr) return Duration::zero();
  // An object's record is at most twice its payload in blocks (the bounds' bytes count those).
  // Rounded up, with a microsecond for the rounding of remote_extra().
  const double s = write_s(2 * bytes, rate_.write_cost(), rate_.bytes_per_s());
  return remote_->ttr_bound(bytes) + Duration(static_cast<int64_t>(std::ceil(s * 1e9)) + 1000);
}

Status StagingProvider::check_remote(const StagingClaim& claim, const Validated& v) {
  std::vector<RemoteSource::Object>& objects = remote_scratch_;
  objects.clear();
  std::string keys;
  for (size_t i = 0; i < v.keys.size(); ++i) {
    if (v.generations[i] != kNotStoredYet) continue;
    auto it = objects_.find(v.keys[i]);
    const bool fetching = it != objects_.end() && it->second.fetching;
    objects.push_back({v.keys[i], fetching ? 0 : v.payload_bytes[i]});
    keys += (keys.empty() ? "" : ", ") + v.keys[i].to_string();
  }
  if (objects.empty() || remote_->ttr(objects)) return Status::ok();
  ++stats_.invalid;
  ++stats_.remote_refusals;
  // NotFound, as every load error a runtime recomputes on (Unavailable tells a client its daemon
  // is unreachable: the vLLM connector drops its link on it).
  return Status::not_found("claim " + std::to_string(claim.id) + ": objects only in the remote " +
                           "tier (" + keys + ") need a node held unhealthy (unavailable) after a " +
                           "failed call: recompute");
}

Result<uint32_t> StagingProvider::prefetch(const StagingClaim& claim) {
  if (remote_ == nullptr) return 0u;
  // Most claims have nothing to fetch: settled by lookups, before any validation.
  const bool any = std::any_of(claim.objects.begin(), claim.objects.end(), [&](const auto& e) {
    auto it = objects_.find(e.key);
    return (it == objects_.end() || !it->second.fetching) && remote_only(e.key);
  });
  if (!any) return 0u;
  Validated& v = validated_;
  TEMPOKV_RETURN_IF_ERROR(validate_claim(claim, v, true));
  TEMPOKV_RETURN_IF_ERROR(check_remote(claim, v));
  const TimePoint use_at = use_time(claim);
  uint32_t started = 0;
  for (size_t i = 0; i < v.keys.size(); ++i) {
    if (v.generations[i] != kNotStoredYet) continue;
    ObjectRec& rec = object(v.keys[i], v.payload_bytes[i], kNotStoredYet);
    if (rec.fetching) continue;
    fetch(v.keys[i], rec, use_at);
    rec.prefetcher = claim.id;
    ++stats_.remote_prefetches;
    ++started;
  }
  return started;
}

bool StagingProvider::awaits_fetch(const StagingClaim& claim) const {
  if (remote_ == nullptr) return false;
  return std::any_of(claim.objects.begin(), claim.objects.end(), [&](const ManifestEntry& e) {
    auto it = objects_.find(e.key);
    return it != objects_.end() && it->second.fetching;
  });
}

void StagingProvider::fetch(const Key& key, ObjectRec& rec, TimePoint use_at) {
  if (rec.fetching) {
    rec.fetch_use_at = std::min(rec.fetch_use_at, use_at);
    return;
  }
  assert(rec.read == ReadState::kNone && rec.generation == kNotStoredYet);
  rec.fetching = true;
  rec.fetch_use_at = use_at;
  ++stats_.remote_fetches;
  ++stats_.remote_fetching;
  std::weak_ptr<int> alive = alive_;
  remote_->fetch(key, rec.payload_bytes, [this, alive, key](Result<uint64_t> generation) {
    if (alive.expired()) return;
    on_fetch_done(key, std::move(generation));
  });
}

void StagingProvider::on_fetch_done(const Key& key, Result<uint64_t> generation) {
  auto it = objects_.find(key);
  if (it == objects_.end() || !it->second.fetching) return;
  ObjectRec& rec = it->second;
  rec.fetching = false;
  --stats_.remote_fetching;
  if (rec.owners.empty()) {
    // A prefetch, or its claims ended: a landed object stays in the store (the claims that
    // commit later read it from there), a failed one stays absent. The TTRs of claims that
    // counted its write change: the controller's next evaluation sees them.
    if (!generation.is_ok()) {
      ++stats_.remote_fetch_errors;
      ++stats_.remote_prefetch_errors;
    }
    // The listener (the controller) fails the claim that started it, if it still waits: a miss
    // is fetched once per claim; a later claim fetches it afresh (a replica may serve it then).
    const ClaimId prefetcher = rec.prefetcher;
    maybe_forget(key);  // rec is gone from here on
    if (fetch_listener_) fetch_listener_(key, prefetcher, generation.status());
    return;
  }
  if (generation.is_ok()) {
    // Its claims validated what the fetch would bring; the read checks the store still holds it.
    rec.generation = *generation;
    enqueue(key, rec, rec.fetch_use_at);
  } else {
    ++stats_.remote_fetch_errors;
    std::vector<Member> owners = std::move(rec.owners);
    rec.owners.clear();
    if (!owners.empty()) tier_.unreserve(key);
    maybe_forget(key);  // rec is gone from here on
    const Status failure(generation.status().code(), "remote fetch of " + key.to_string() +
                                                         " failed: " + generation.status().message());
    for (const Member& m : owners) fail_claim(m.claim, failure);
  }
  pump();
  flush_callbacks();
  // Claims not committed may have awaited it too.
  if (fetch_listener_) fetch_listener_(key, 0, generation.status());
}

}  // namespace tempokv
