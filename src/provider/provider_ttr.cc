// StagingProvider's estimators: the state-aware TTR of DESIGN.md §4 and TempoKV-Static's.
#include <algorithm>
#include <cmath>
#include <queue>
#include <limits>
#include <unordered_set>

#include "common/units.h"
#include "provider/staging_provider.h"
#include "provider/ttr_projection.h"

namespace tempokv {
namespace {

// The claim's fresh reads (their bytes, in manifest order) as continue_projection_s's next().
auto fresh_reads(const std::vector<double>& fresh) {
  return [&fresh, i = size_t{0}]() mutable -> std::optional<PlannedRead> {
    if (i == fresh.size()) return std::nullopt;
    return PlannedRead{fresh[i++], true};
  };
}

}  // namespace

Duration StagingProvider::ttr_reference(const StagingClaim& claim) const {
  const uint64_t epoch = ++ttr_epoch_;
  const TimePoint use_at = use_time(claim);
  uint64_t needed = 0;
  std::vector<PlannedRead> fresh;  // reads the claim would add, in manifest order
  std::unordered_set<Key> fresh_keys;
  for (const ManifestEntry& e : claim.objects) {
    if (tier_.resident(e.key)) continue;  // protecting a resident object is instant
    auto it = objects_.find(e.key);
    if (it != objects_.end() && it->second.read != ReadState::kNone &&
        (it->second.read == ReadState::kInFlight || it->second.queue_pos->first.first <= use_at)) {
      // Covered by a read in flight or queued ahead: it keeps that read's completion time.
      if (it->second.mark != epoch) {
        it->second.mark = epoch;
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
    double done = served - rec.served_at_issue;
    double remaining = std::max(0.0, static_cast<double>(rec.read_bytes) - done);
    in_flight.push_back({remaining, rec.mark == epoch});
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
                                   rate_.bytes_per_s(), needed);
  return Duration(std::llround((s + write_ahead_s()) * 1e9));
}

// The reads in service share the rate equally; the projection tracks `served`, the progress every
// read in service has received, and orders reads by the progress at which they finish (as
// project_last_finish_s does, with the same arithmetic, so ttr() equals ttr_reference()).
const StagingProvider::TtrSnapshot& StagingProvider::ttr_snapshot() const {
  const TimePoint now = executor_.now();
  if (snap_.version == state_version_ && snap_.at == now) return snap_;
  const uint64_t version = state_version_;
  const double rate = rate_.bytes_per_s();
  const double served_now_bytes = served_now();
  using Active = std::pair<double, const ObjectRec*>;
  std::priority_queue<Active, std::vector<Active>, std::greater<>> active;
  for (const Key& key : in_flight_keys_) {
    const ObjectRec& rec = objects_.at(key);
    double done = served_now_bytes - rec.served_at_issue;
    active.push({std::max(0.0, static_cast<double>(rec.read_bytes) - done), &rec});
  }
  auto queued = queue_.begin();
  double served = 0, t = 0;
  auto refill = [&] {  // true when the queue ran out with a slot free
    while (active.size() < options_.max_reads_in_flight) {
      if (queued == queue_.end()) return true;
      const ObjectRec& rec = *(queued++)->second.rec;
      active.push({served + static_cast<double>(rec.read_bytes), &rec});
    }
    return false;
  };
  while (!refill()) {
    Active top = active.top();
    active.pop();
    double n = static_cast<double>(active.size() + 1);
    if (top.first > served) {
      t += (top.first - served) * n / rate;
      served = top.first;
    }
    top.second->snap_finish_s = t;
    top.second->snap_version = version;
  }
  snap_.active.clear();
  while (!active.empty()) {
    active.top().second->snap_finish_s = std::numeric_limits<double>::quiet_NaN();
    active.top().second->snap_version = version;
    snap_.active.push_back(active.top());
    active.pop();
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
                                 options_.max_reads_in_flight, rate_.bytes_per_s(), left);
  }
  return Duration(std::llround((last + write_ahead_s()) * 1e9));
}

Duration StagingProvider::ttr_bound(uint64_t extra_bytes) const {
  const double served = served_now();
  double bytes = static_cast<double>(queued_bytes_ + extra_bytes) +
                 static_cast<double>(write_bytes_in_flight_) * options_.write_cost;
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

StagingProvider::Queue::iterator StagingProvider::queue_erase(Queue::iterator it) {
  if (!cum_stale_) {
    if (it == queue_.begin() && cum_head_ < cum_.size() && cum_[cum_head_].first == it->first) {
      cum_head_bytes_ = cum_[cum_head_++].second;
    } else {
      cum_stale_ = true;
    }
  }
  return queue_.erase(it);
}

void StagingProvider::refresh_cum() const {
  if (!cum_stale_) return;
  cum_.clear();
  uint64_t sum = 0;
  for (const auto& [key, read] : queue_) {
    sum += read.rec->read_bytes;
    cum_.emplace_back(key, sum);
  }
  cum_head_ = 0;
  cum_head_bytes_ = 0;
  cum_stale_ = false;
}

StagingProvider::TtrBoundWalk StagingProvider::ttr_bound_walk() const {
  TtrBoundWalk w;
  const double served = served_now();
  for (const Key& key : in_flight_keys_) {
    const ObjectRec& rec = objects_.at(key);
    w.bytes_ahead_ +=
        std::max(0.0, static_cast<double>(rec.read_bytes) - (served - rec.served_at_issue));
  }
  w.in_flight_bytes_ = w.bytes_ahead_;
  w.bytes_ahead_ += static_cast<double>(write_bytes_in_flight_) * options_.write_cost;
  refresh_cum();
  w.p_ = this;
  w.cum_ = &cum_;
  w.head_ = cum_head_;
  w.head_bytes_ = cum_head_bytes_;
  w.bytes_per_s_ = rate_.bytes_per_s();
  return w;
}

Duration StagingProvider::ttr_bound_reference(TimePoint use_at, uint64_t bytes) const {
  uint64_t queued = 0;
  for (const auto& [key, read] : queue_) {
    if (key.first <= use_at) queued += read.rec->read_bytes;
  }
  const TtrBoundWalk w = ttr_bound_walk();
  const double total = w.bytes_ahead_ + static_cast<double>(queued) + static_cast<double>(bytes);
  return Duration(static_cast<int64_t>(std::ceil(total * 1e9 / w.bytes_per_s_)) + 1000);
}

uint64_t StagingProvider::TtrBoundWalk::queued_through(const QueueKey& last) const {
  const auto first = cum_->begin() + static_cast<std::ptrdiff_t>(head_);
  const auto end = std::upper_bound(
      first, cum_->end(), last, [](const QueueKey& k, const CumBytes& e) { return k < e.first; });
  return end == first ? 0 : std::prev(end)->second - head_bytes_;
}

StagingProvider::TtrBoundWalk::Range StagingProvider::TtrBoundWalk::range(
    const StagingClaim& claim) {
  const StagingProvider& p = *p_;
  const TimePoint use_at = p.use_time(claim);
  Range out;
  uint64_t fresh = 0;  // bytes of the reads it would add
  uint64_t largest = p.max_read_bytes_;
  std::optional<QueueKey> last_covered;  // the latest queued read ahead that it needs
  fresh_keys_.clear();
  for (const ManifestEntry& e : claim.objects) {
    if (p.tier_.resident(e.key)) continue;
    out.all_resident = false;
    auto it = p.objects_.find(e.key);
    if (it != p.objects_.end() && it->second.read != ReadState::kNone &&
        (it->second.read == ReadState::kInFlight || it->second.queue_pos->first.first <= use_at)) {
      if (it->second.read == ReadState::kQueued &&
          (!last_covered || *last_covered < it->second.queue_pos->first)) {
        last_covered = it->second.queue_pos->first;
      }
      continue;
    }
    const uint64_t bytes = round_up(e.bytes, kBlockBytes);
    fresh += bytes;
    largest = std::max(largest, bytes);
    fresh_keys_.push_back(e.key);
  }
  if (out.all_resident) return out;
  const double rate = bytes_per_s_;
  const uint64_t ahead = queued_through(QueueKey{use_at, UINT64_MAX});
  const double write_s = p.write_ahead_s();
  // hi: as bound(), with its own bytes only (ttr() projects exactly those reads).
  const double total = bytes_ahead_ + static_cast<double>(ahead) + static_cast<double>(fresh);
  out.hi = Duration(static_cast<int64_t>(std::ceil(total * 1e9 / rate)) + 1000);
  bool repeated = false;
  if (fresh_keys_.size() > 1) {
    std::sort(fresh_keys_.begin(), fresh_keys_.end());
    repeated = std::adjacent_find(fresh_keys_.begin(), fresh_keys_.end()) != fresh_keys_.end();
  }
  if (repeated) return out;  // lo stays 0 (ttr() reads a repeated key once)
  // The bytes issued up to its last needed read: with new reads, everything ahead and them; else
  // up to its latest queued read ahead (0: only reads in flight, which give no more than 0).
  double issued = 0;
  if (fresh > 0) {
    issued = in_flight_bytes_ + static_cast<double>(ahead) + static_cast<double>(fresh);
  } else if (last_covered) {
    issued = in_flight_bytes_ + static_cast<double>(queued_through(*last_covered));
  }
  const uint64_t slots =
      std::max<uint64_t>(p.options_.max_reads_in_flight, p.in_flight_keys_.size());
  const double left = static_cast<double>(slots - 1) * static_cast<double>(largest);
  const double lo_s = std::max(0.0, (issued - left) / rate) + write_s;
  out.lo = Duration(std::max<int64_t>(0, static_cast<int64_t>(std::floor(lo_s * 1e9)) - 1000));
  return out;
}

Duration StagingProvider::TtrBoundWalk::bound(TimePoint use_at, uint64_t bytes) const {
  // The queued reads used no later than use_at are a prefix of the issue order.
  const uint64_t queued = queued_through(QueueKey{use_at, UINT64_MAX});
  const double total = bytes_ahead_ + static_cast<double>(queued) + static_cast<double>(bytes);
  // Rounded up, with a microsecond for the rounding of ttr() itself (as ttr_bound()).
  return Duration(static_cast<int64_t>(std::ceil(total * 1e9 / bytes_per_s_)) + 1000);
}

StagingProvider::TtrWalk StagingProvider::ttr_walk() const {
  TtrWalk w;
  w.p_ = this;
  w.id_ = ++walk_seq_;
  const double served = served_now();
  for (const Key& key : in_flight_keys_) {
    const ObjectRec& rec = objects_.at(key);
    double done = served - rec.served_at_issue;
    w.active_.push_back({std::max(0.0, static_cast<double>(rec.read_bytes) - done), &rec});
    rec.walk_id = w.id_;
    rec.walk_finish_s = std::numeric_limits<double>::quiet_NaN();
  }
  std::make_heap(w.active_.begin(), w.active_.end(), std::greater<>());
  w.next_ = queue_.begin();
  return w;
}

// The loop of project_last_finish_s() (refill, then one read leaves service), stopped where a
// refill would take a read used later than use_at.
void StagingProvider::TtrWalk::advance(TimePoint use_at) {
  const uint32_t slots = p_->options_.max_reads_in_flight;
  const double rate = p_->rate_.bytes_per_s();
  for (;;) {
    while (active_.size() < slots) {
      if (next_ == p_->queue_.end() || next_->first.first > use_at) return;
      const ObjectRec& rec = *(next_++)->second.rec;
      active_.push_back({served_ + static_cast<double>(rec.read_bytes), &rec});
      std::push_heap(active_.begin(), active_.end(), std::greater<>());
      rec.walk_id = id_;
      rec.walk_finish_s = std::numeric_limits<double>::quiet_NaN();
    }
    std::pop_heap(active_.begin(), active_.end(), std::greater<>());
    const Active top = active_.back();
    active_.pop_back();
    const double n = static_cast<double>(active_.size() + 1);
    advance_shared(t_, served_, top.first, n, rate);
    top.second->walk_finish_s = t_;
  }
}

Duration StagingProvider::TtrWalk::ttr(const StagingClaim& claim) {
  const TimePoint use_at = p_->use_time(claim);
  if (last_use_ && use_at < *last_use_) return p_->ttr(claim);
  // A claim whose objects are all resident needs no read (0, as ttr_reference() answers), and the
  // projection need not advance for it: the next claim's call advances as far as it needs.
  if (std::all_of(claim.objects.begin(), claim.objects.end(),
                  [this](const ManifestEntry& e) { return p_->tier_.resident(e.key); })) {
    return Duration::zero();
  }
  last_use_ = use_at;
  advance(use_at);
  const uint64_t epoch = ++p_->ttr_epoch_;
  double last = 0;
  uint64_t in_service = 0;  // needed reads in service at the checkpoint
  bool needed = false;
  fresh_.clear();
  fresh_keys_.clear();
  for (const ManifestEntry& e : claim.objects) {
    if (p_->tier_.resident(e.key)) continue;
    auto it = p_->objects_.find(e.key);
    if (it != p_->objects_.end() && it->second.read != ReadState::kNone &&
        (it->second.read == ReadState::kInFlight || it->second.queue_pos->first.first <= use_at)) {
      const ObjectRec& rec = it->second;
      if (rec.mark == epoch) continue;
      rec.mark = epoch;
      needed = true;
      if (rec.walk_id != id_) return p_->ttr_reference(claim);  // not projected: cannot happen
      if (std::isnan(rec.walk_finish_s)) {
        ++in_service;
      } else {
        last = std::max(last, rec.walk_finish_s);
      }
      continue;
    }
    // Not covered, or queued for a claim used later (committing this one moves it up to here).
    fresh_.push_back(static_cast<double>(round_up(e.bytes, kBlockBytes)));
    fresh_keys_.push_back(e.key);
    needed = true;
  }
  if (fresh_keys_.size() > 1) {
    // A key twice in the manifest is read once (ttr_reference's set); rare, so answered there.
    std::sort(fresh_keys_.begin(), fresh_keys_.end());
    const bool repeated =
        std::adjacent_find(fresh_keys_.begin(), fresh_keys_.end()) != fresh_keys_.end();
    fresh_keys_.clear();
    if (repeated) return p_->ttr_reference(claim);
  }
  fresh_keys_.clear();
  if (!needed) return Duration::zero();
  uint64_t left = in_service + fresh_.size();
  if (left > 0) {
    // From the checkpoint: the reads in service and the claim's new reads.
    std::vector<PlannedRead>& heap = scratch_;
    heap.clear();
    for (const auto& [finish, rec] : active_) heap.push_back({finish, rec->mark == epoch});
    last = continue_projection_s(heap, {served_, t_}, last, fresh_reads(fresh_),
                                 p_->options_.max_reads_in_flight, p_->rate_.bytes_per_s(), left);
  }
  return Duration(std::llround((last + p_->write_ahead_s()) * 1e9));
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
