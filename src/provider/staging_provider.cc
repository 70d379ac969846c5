#include "provider/staging_provider.h"

#include <algorithm>
#include <cassert>
#include <string>
#include <unordered_set>

#include "common/units.h"

namespace tempokv {

std::string_view claim_phase_name(ClaimPhase phase) {
  switch (phase) {
    case ClaimPhase::kStaging:
      return "STAGING";
    case ClaimPhase::kStageReady:
      return "STAGE_READY";
    case ClaimPhase::kOrdinaryReading:
      return "ORDINARY_READING";
    case ClaimPhase::kOrdinaryReady:
      return "ORDINARY_READY";
    case ClaimPhase::kDraining:
      return "DRAINING";
  }
  return "UNKNOWN";
}

Result<std::unique_ptr<StagingProvider>> StagingProvider::create(Executor& executor, Store& store,
                                                                 FastTier& tier,
                                                                 const ProviderOptions& options) {
  TEMPOKV_RETURN_IF_ERROR(options.validate());
  return std::unique_ptr<StagingProvider>(new StagingProvider(executor, store, tier, options));
}

StagingProvider::StagingProvider(Executor& executor, Store& store, FastTier& tier,
                                 const ProviderOptions& options)
    : executor_(executor),
      store_(store),
      tier_(tier),
      options_(options),
      rate_(options.prior_read_bytes_per_s, options.calibration_sample, options.calibration_weight,
            options.write_cost),
      fluid_last_(executor.now()) {
  // Every staging read lands in the arena: registered once, the SSD engine reads into it with
  // fixed buffers instead of pinning its pages per request.
  Backing& b = tier_.backing();
  if (b.base() != nullptr) store_.register_read_buffer(b.base(), b.size_bytes());
  if (options_.write_cost > 0) {
    store_.set_write_listener([this](uint64_t bytes, bool started) {
      on_store_write(bytes, started);
    });
  }
  tier_.set_entry_listener([this](const Key& key, uint64_t budget_bytes, uint64_t occupied_bytes) {
    if (entry_listener_ && !entries_muted_) entry_listener_(key, budget_bytes, occupied_bytes);
  });
  // An object reclaimed from the store leaves nothing a claim could validate: its fast-tier copy
  // only takes room (told later, in a posted task: the key may be back by then).
  store_.set_eviction_listener([this](const Key& key) {
    const FastObject* o = tier_.find(key);
    if (o == nullptr || o->residency != Residency::kResident) return;
    std::optional<ObjectInfo> info = store_.lookup(key);
    if ((!info || info->generation != o->generation) && tier_.discard(key)) {
      ++stats_.stale_copies_dropped;
    }
  });
}

StagingProvider::~StagingProvider() {
  tier_.set_entry_listener(nullptr);
  store_.set_eviction_listener(nullptr);
  if (options_.write_cost > 0) store_.set_write_listener(nullptr);
  Backing& b = tier_.backing();
  if (b.base() != nullptr) store_.unregister_read_buffer(b.base());
}

namespace {

// Whether `key` comes for the first time in a manifest of n entries (a key twice counts once),
// `kept` holding the keys kept so far. Manifests are short: a linear search of those costs less
// than a set (this runs for every commit attempt, refused ones too); long ones use `seen`.
bool first_time(const Key& key, size_t n, const std::vector<Key>& kept,
                std::unordered_set<Key>& seen) {
  constexpr size_t kLinearDedup = 64;
  if (n <= kLinearDedup) return std::find(kept.begin(), kept.end(), key) == kept.end();
  return seen.insert(key).second;
}

}  // namespace

Status StagingProvider::validate_claim(const StagingClaim& claim, Validated& v, bool remote_ok) {
  if (claims_.count(claim.id) != 0) {
    return Status::failed_precondition("claim " + std::to_string(claim.id) +
                                       " is already committed or on the ordinary path");
  }
  v.keys.clear();
  v.payload_bytes.clear();
  v.generations.clear();
  std::unordered_set<Key> seen;
  for (const ManifestEntry& e : claim.objects) {
    if (!first_time(e.key, claim.objects.size(), v.keys, seen)) continue;
    std::optional<ObjectInfo> info = store_.lookup(e.key);
    if (!info && remote_ok && remote_only(e.key)) {
      // Fetched as its staging; the generation is the store's once it is there.
      Status st = usable(claim.id, e.key, kNotStoredYet);
      if (!st.is_ok()) {
        ++stats_.invalid;
        return st;
      }
      v.keys.push_back(e.key);
      v.payload_bytes.push_back(e.bytes);
      v.generations.push_back(kNotStoredYet);
      continue;
    }
    if (!info) {
      ++stats_.invalid;
      return Status::not_found("claim " + std::to_string(claim.id) + ": object " +
                               e.key.to_string() + " is not in the SSD store");
    }
    if (info->payload_bytes != e.bytes) {
      ++stats_.invalid;
      return Status::failed_precondition(
          "claim " + std::to_string(claim.id) + ": object " + e.key.to_string() + " has " +
          std::to_string(info->payload_bytes) + " bytes in the store, the manifest says " +
          std::to_string(e.bytes));
    }
    Status st = usable(claim.id, e.key, info->generation);
    if (!st.is_ok()) {
      ++stats_.invalid;
      return st;
    }
    v.keys.push_back(e.key);
    v.payload_bytes.push_back(e.bytes);
    v.generations.push_back(info->generation);
  }
  return Status::ok();
}

Status StagingProvider::usable(ClaimId id, const Key& key, uint64_t generation) {
  const FastObject* o = tier_.find(key);
  if (o != nullptr && o->residency == Residency::kResident && o->generation != generation) {
    const uint64_t old = o->generation;
    if (!tier_.discard(key)) {
      return Status::failed_precondition(
          "claim " + std::to_string(id) + ": object " + key.to_string() +
          " changed in the store (generation " + std::to_string(generation) +
          ") while the fast tier's copy of generation " + std::to_string(old) +
          " is still in use; retry once it is released");
    }
    ++stats_.stale_copies_dropped;
  }
  auto it = objects_.find(key);
  if (it != objects_.end() && it->second.generation != generation) {
    return Status::failed_precondition(
        "claim " + std::to_string(id) + ": object " + key.to_string() +
        " changed in the store (generation " + std::to_string(generation) +
        ") while generation " + std::to_string(it->second.generation) +
        " is staged for other claims");
  }
  return Status::ok();
}

StagingProvider::ObjectRec& StagingProvider::object(const Key& key, uint64_t payload_bytes,
                                                    uint64_t generation) {
  auto [it, fresh] = objects_.try_emplace(key);
  if (fresh) {
    it->second.generation = generation;
    it->second.payload_bytes = payload_bytes;
    it->second.read_bytes = round_up(payload_bytes, kBlockBytes);
    max_read_bytes_ = std::max(max_read_bytes_, it->second.read_bytes);
  }
  return it->second;
}

TimePoint StagingProvider::issue_key(std::optional<TimePoint> use_at) const {
  if (options_.issue_order == IssueOrder::kCommit || !use_at) return executor_.now();
  return *use_at;
}

const StagingProvider::ObjectRec* StagingProvider::read_of(const Key& key) const {
  auto it = objects_.find(key);
  return it == objects_.end() || it->second.read == ReadState::kNone ? nullptr : &it->second;
}

const StagingProvider::ObjectRec* StagingProvider::covered_read(const Key& key,
                                                                TimePoint use_at) const {
  const ObjectRec* rec = read_of(key);
  return rec != nullptr && covers(*rec, use_at) ? rec : nullptr;
}

void StagingProvider::enqueue(const Key& key, ObjectRec& rec, TimePoint use_at) {
  if (rec.read != ReadState::kNone) ++stats_.coalesced;
  place(key, rec, use_at);
}

void StagingProvider::place(const Key& key, ObjectRec& rec, TimePoint use_at) {
  if (rec.read == ReadState::kInFlight) return;
  const bool fresh = rec.read == ReadState::kNone;
  if (rec.read == ReadState::kQueued) {
    if (rec.queue_pos->first.first <= use_at) return;
    queue_erase(rec.queue_pos);  // a claim used sooner needs it: it moves up
  } else {
    rec.read = ReadState::kQueued;
    const uint64_t owed = demand_charge(rec);
    demand_queued_bytes_ += owed;
    queued_bytes_ += rec.read_bytes;
    if (owed > 0 && entry_listener_) entry_listener_(key, 0, owed);
  }
  rec.queue_pos = queue_.emplace(QueueKey{use_at, queue_seq_++}, QueuedRead{key, &rec}).first;
  note_queued(rec, fresh && std::next(rec.queue_pos) == queue_.end());
}

Status StagingProvider::expedite(ClaimId id, TimePoint use_at) {
  auto it = claims_.find(id);
  if (it == claims_.end()) {
    return Status::not_found("expedite: claim " + std::to_string(id) + " is not known");
  }
  if (it->second.ordinary || it->second.draining) return Status::ok();
  if (options_.issue_order == IssueOrder::kCommit) return Status::ok();  // nothing passes
  for (const Key& key : it->second.keys) {
    auto o = objects_.find(key);
    if (o != objects_.end() && o->second.fetching) {
      o->second.fetch_use_at = std::min(o->second.fetch_use_at, use_at);
    }
    if (o != objects_.end() && o->second.read == ReadState::kQueued &&
        o->second.queue_pos->first.first > use_at) {
      place(key, o->second, use_at);
    }
  }
  pump();
  flush_callbacks();
  return Status::ok();
}

ProtectCost StagingProvider::commit_cost(const Validated& v) const {
  ProtectCost cost;
  // Room owed to admitted demand reads stays theirs, except for the reads this commit reserves.
  uint64_t owed = demand_queued_bytes_;
  for (size_t i = 0; i < v.keys.size(); ++i) {
    tier_.add_protect_cost(v.keys[i], round_up(v.payload_bytes[i], kBlockBytes), cost);
    auto it = objects_.find(v.keys[i]);
    if (it != objects_.end()) owed -= demand_charge(it->second);
  }
  cost.occupied_bytes += owed;
  return cost;
}

bool StagingProvider::refuses(const ProtectCost& cost) {
  // Refused exactly when check_protect_cost() would refuse: short of the budget's room or of the
  // capacity's (cost.occupied_bytes counts the room owed to demand reads, commit_cost()).
  last_own_cost_ = {cost.budget_bytes, static_cast<int64_t>(cost.occupied_bytes) -
                                           static_cast<int64_t>(demand_queued_bytes_)};
  const uint64_t budget_short = tier_.budget_shortfall(cost);
  const uint64_t capacity_short = tier_.capacity_shortfall(cost);
  if (budget_short == 0 && capacity_short == 0) return false;
  last_refusal_budget_shortfall_ = budget_short;
  last_refusal_capacity_shortfall_ = capacity_short;
  return true;
}

bool StagingProvider::refused_now(const StagingClaim& claim) {
  // The keys and payload sizes validate_claim() gives a claim whose objects are all in the store
  // with the manifest's sizes: each key once, with its first entry's bytes.
  Validated& v = validated_;
  v.keys.clear();
  v.payload_bytes.clear();
  std::unordered_set<Key> seen;
  for (const ManifestEntry& e : claim.objects) {
    if (!first_time(e.key, claim.objects.size(), v.keys, seen)) continue;
    v.keys.push_back(e.key);
    v.payload_bytes.push_back(e.bytes);
  }
  return refuses(commit_cost(v));
}

Result<CommitState> StagingProvider::commit(const StagingClaim& claim, ReadyCallback on_ready,
                                            Duration* ttr_before, RefusalText refusal_text) {
  Validated& v = validated_;
  TEMPOKV_RETURN_IF_ERROR(validate_claim(claim, v, remote_ != nullptr));
  if (remote_ != nullptr) TEMPOKV_RETURN_IF_ERROR(check_remote(claim, v));
  const ProtectCost cost = commit_cost(v);
  if (refuses(cost)) {
    ++stats_.refusals;
    if (refusal_text == RefusalText::kCodeOnly) return Status::resource_exhausted("refused");
    Status st = tier_.check_protect_cost(cost);
    return Status(st.code(), "claim " + std::to_string(claim.id) + " refused: " + st.message());
  }
  if (ttr_before) *ttr_before = ttr(claim);  // nothing has changed yet
  const TimePoint use_at = use_time(claim);
  ClaimRec& c = claims_[claim.id];
  c.keys = v.keys;
  for (size_t i = 0; i < c.keys.size(); ++i) {
    const Key& key = c.keys[i];
    ObjectRec& rec = object(key, v.payload_bytes[i], v.generations[i]);
    demand_queued_bytes_ -= demand_charge(rec);  // a queued demand read becomes reserved
    rec.owners.push_back({claim.id, false});
    if (v.generations[i] == kNotStoredYet) {  // fetched first, then read (provider_remote.cc)
      ++c.pending;
      if (rec.owners.size() == 1) {
        Status st = tier_.reserve(key, rec.read_bytes);
        assert(st.is_ok() && "the protect cost was checked");
        (void)st;
      }
      fetch(key, rec, use_at);
      continue;
    }
    if (tier_.use(key)) {
      Status st = tier_.protect(key);
      assert(st.is_ok() && "the protect cost was checked");
      (void)st;
      continue;
    }
    ++c.pending;
    if (rec.owners.size() == 1) {
      Status st = tier_.reserve(key, rec.read_bytes);
      assert(st.is_ok() && "the protect cost was checked");
      (void)st;
    }
    enqueue(key, rec, use_at);
  }
  ++stats_.commits;
  if (c.pending == 0) {
    ++stats_.ready_at_commit;
    return CommitState::kStageReady;
  }
  c.on_ready = std::move(on_ready);
  pump();
  flush_callbacks();
  return CommitState::kStaging;
}

void StagingProvider::flush_callbacks() {
  while (!callbacks_.empty()) {
    auto batch = std::move(callbacks_);
    callbacks_.clear();
    for (auto& [cb, args] : batch) cb(args.first, args.second);
  }
}

std::optional<ClaimPhase> StagingProvider::phase(ClaimId id) const {
  auto it = claims_.find(id);
  if (it == claims_.end()) return std::nullopt;
  const ClaimRec& c = it->second;
  if (c.draining) return ClaimPhase::kDraining;
  if (c.ordinary) return c.pending > 0 ? ClaimPhase::kOrdinaryReading : ClaimPhase::kOrdinaryReady;
  return c.pending > 0 ? ClaimPhase::kStaging : ClaimPhase::kStageReady;
}

ProviderStats StagingProvider::stats() const {
  ProviderStats s = stats_;
  s.queued_reads = queue_.size();
  s.in_flight_reads = in_flight_keys_.size();
  s.claims = claims_.size();
  s.draining_claims = 0;
  for (const auto& [id, c] : claims_) s.draining_claims += c.draining ? 1 : 0;
  s.ordinary_waiting = ordinary_waiting_.size();
  s.read_bytes_per_s = rate_.bytes_per_s();
  s.store_writes_in_flight = writes_in_flight_;
  s.store_write_bytes_in_flight = write_bytes_in_flight_;
  s.rate_samples = rate_.samples();
  s.write_cost = rate_.write_cost();
  s.writes_while_reading = rate_.writes_while_reading();
  return s;
}

}  // namespace tempokv
