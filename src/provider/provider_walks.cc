// StagingProvider's TTR walks for one evaluation (see staging_provider.h): TtrBoundWalk, bounds
// from the queue's prefix sums of bytes (kept here with the queue's removals that keep them), and
// TtrWalk, the exact projection shared by claims taken in use order.
#include <algorithm>
#include <cmath>
#include <limits>

#include "common/units.h"
#include "provider/staging_provider.h"
#include "provider/ttr_projection.h"

namespace tempokv {

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

void StagingProvider::note_queued(const ObjectRec& rec, bool at_tail) {
  // A new read queued after every other (a commit of a claim used after every queued read: the
  // dense case's usual commit) extends the prefix sums instead of leaving them to be rebuilt.
  if (at_tail && !cum_stale_) {
    cum_.emplace_back(rec.queue_pos->first,
                      (cum_.empty() ? 0 : cum_.back().second) + rec.read_bytes);
  } else {
    cum_stale_ = true;
  }
  ++state_version_;
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
  for (const Key& key : in_flight_keys_) w.bytes_ahead_ += objects_.at(key).left_bytes(served);
  w.in_flight_bytes_ = w.bytes_ahead_;
  w.bytes_ahead_ += static_cast<double>(write_bytes_in_flight_) * rate_.write_cost();
  refresh_cum();
  w.p_ = this;
  w.cum_ = &cum_;
  w.head_ = cum_head_;
  w.head_bytes_ = cum_head_bytes_;
  w.bytes_per_s_ = rate_.bytes_per_s();
  w.scale_ = bound_scale();
  return w;
}

Duration StagingProvider::ttr_bound_reference(TimePoint use_at, uint64_t bytes) const {
  uint64_t queued = 0;
  const TimePoint ahead_of = issue_key(use_at);
  for (const auto& [key, read] : queue_) {
    if (key.first <= ahead_of) queued += read.rec->read_bytes;
  }
  const TtrBoundWalk w = ttr_bound_walk();
  const double total = w.bytes_ahead_ + static_cast<double>(queued) + static_cast<double>(bytes);
  return Duration(static_cast<int64_t>(std::ceil(total * w.scale_ * 1e9 / w.bytes_per_s_)) + 1000) +
         remote_bound(bytes);
}

uint64_t StagingProvider::TtrBoundWalk::queued_through(const QueueKey& last, Memo& memo) const {
  // The window walk asks bound() and then range() of one claim: the same use time twice.
  if (memo.set && memo.key == last) return memo.bytes;
  const auto after = [](const QueueKey& k, const CumBytes& e) { return k < e.first; };
  const std::vector<CumBytes>& cum = *cum_;
  // The answer is the first entry after `last` in [head_, size): bracketed from the last answer
  // of this kind in doubling steps, then found by a binary search inside the bracket.
  size_t lo = head_, hi = cum.size();
  if (memo.set && memo.end >= head_ && memo.end <= cum.size()) {
    if (memo.key < last) {
      lo = memo.end;  // every entry before it is <= memo.key < last
      for (size_t step = 1; lo < hi; step *= 2) {
        const size_t probe = std::min(hi, lo + step);
        if (last < cum[probe - 1].first) {
          hi = probe - 1;  // the entry at probe - 1 is after last: the answer is at most that
          break;
        }
        lo = probe;
      }
    } else {
      hi = memo.end;  // every entry from it on is > memo.key > last
      for (size_t step = 1; lo < hi; step *= 2) {
        const size_t probe = hi - std::min(hi - lo, step);
        if (!(last < cum[probe].first)) {
          lo = probe + 1;  // the entry at probe is <= last: the answer is after it
          break;
        }
        hi = probe;
      }
    }
  }
  const auto end = std::upper_bound(cum.begin() + static_cast<std::ptrdiff_t>(lo),
                                    cum.begin() + static_cast<std::ptrdiff_t>(hi), last, after);
  memo.key = last;
  memo.end = static_cast<size_t>(end - cum.begin());
  memo.bytes = memo.end == head_ ? 0 : cum[memo.end - 1].second - head_bytes_;
  memo.set = true;
  return memo.bytes;
}

namespace {

// The remote part of a claim's TTR (StagingProvider::remote_extra) moves both bounds by itself.
template <typename Range>
void add_remote(Range& r, Duration remote) {
  r.lo += remote;
  r.hi += remote;
}

}  // namespace

StagingProvider::TtrBoundWalk::Range StagingProvider::TtrBoundWalk::range(
    const StagingClaim& claim) {
  const StagingProvider& p = *p_;
  const TimePoint use_at = p.use_time(claim);
  Range out;
  uint64_t fresh = 0;  // bytes of the reads it would add
  uint64_t largest = p.max_read_bytes_;
  std::optional<QueueKey> last_covered;  // the latest queued read ahead that it needs
  uint64_t covered_bytes = 0;            // and its bytes
  uint64_t last_fresh_bytes = 0;         // the bytes of its last new read (manifest order)
  fresh_keys_.clear();
  for (const ManifestEntry& e : claim.objects) {
    // An object with a read queued or in flight is not resident: the tier is asked only about
    // the others (covered_read() in its two halves, one lookup per covered object, not two).
    const ObjectRec* rec = p.read_of(e.key);
    if (rec == nullptr && p.tier_.resident(e.key)) continue;
    out.all_resident = false;
    if (rec != nullptr && covers(*rec, use_at)) {
      if (rec->read == ReadState::kQueued &&
          (!last_covered || *last_covered < rec->queue_pos->first)) {
        last_covered = rec->queue_pos->first;
        covered_bytes = rec->read_bytes;
      }
      continue;
    }
    const uint64_t bytes = round_up(e.bytes, kBlockBytes);
    fresh += bytes;
    largest = std::max(largest, bytes);
    last_fresh_bytes = bytes;
    fresh_keys_.push_back(e.key);
  }
  if (out.all_resident) return out;
  const double rate = bytes_per_s_;
  const uint64_t ahead = queued_through(QueueKey{use_at, UINT64_MAX}, by_use_memo_);
  out.fresh_bytes = fresh;
  out.ahead_bytes = in_flight_bytes_ + static_cast<double>(ahead);
  const double write_s = p.write_ahead_s();
  const uint64_t slots =
      std::max<uint64_t>(p.options_.max_reads_in_flight, p.in_flight_keys_.size());
  // hi: as bound(), with its own bytes only (ttr() projects exactly those reads).
  double total = bytes_ahead_ + static_cast<double>(ahead) + static_cast<double>(fresh);
  // The queued bytes up to its latest covered read (hi's and lo's bound without new reads).
  const uint64_t through_covered =
      fresh == 0 && last_covered ? queued_through(*last_covered, covered_memo_) : 0;
  if (fresh == 0) {
    // Every read it needs is in flight or queued up to its latest covered read. The reads issued
    // after that one share the rate with one of its reads until its TTR, each at that read's pace,
    // so they get at most (slots - 1) x largest of service by then: a bound that does not grow
    // with the reads queued between its reads and its use time.
    const double through = bytes_ahead_ +
                           static_cast<double>(through_covered) +
                           static_cast<double>(slots - 1) * static_cast<double>(largest);
    total = std::min(total, through);
  }
  out.hi = Duration(static_cast<int64_t>(std::ceil(total * scale_ * 1e9 / rate)) + 1000);
  if (fresh_keys_.size() > 1) {
    std::sort(fresh_keys_.begin(), fresh_keys_.end());
    out.repeated = std::adjacent_find(fresh_keys_.begin(), fresh_keys_.end()) != fresh_keys_.end();
  }
  if (out.repeated) {  // lo stays 0 (ttr() reads a repeated key once)
    if (p.remote_ != nullptr) add_remote(out, p.remote_extra(claim));
    return out;
  }
  // The bytes issued up to its last needed read: with new reads, everything ahead and them; else
  // up to its latest queued read ahead (0: only reads in flight, which give no more than 0).
  double issued = 0;
  uint64_t last_bytes = 0;  // the bytes of that last needed read
  if (fresh > 0) {
    issued = in_flight_bytes_ + static_cast<double>(ahead) + static_cast<double>(fresh);
    last_bytes = last_fresh_bytes;
  } else if (last_covered) {
    issued = in_flight_bytes_ + static_cast<double>(through_covered);
    last_bytes = covered_bytes;
  }
  // Every other read still in service then was issued no later than that last read, so it has
  // had at least as much service since (the reads in service share the rate equally): at least
  // that read's bytes. What is left of it is at most largest - last_bytes (0 when every read has
  // one size, which makes lo nearly exact).
  const double left = static_cast<double>(slots - 1) *
                      static_cast<double>(largest - std::min(largest, last_bytes));
  const double lo_s = std::max(0.0, (issued - left) / rate) + write_s;
  out.lo = Duration(std::max<int64_t>(0, static_cast<int64_t>(std::floor(lo_s * 1e9)) - 1000));
  if (p.remote_ != nullptr) add_remote(out, p.remote_extra(claim));
  return out;
}

Duration StagingProvider::TtrBoundWalk::bound(TimePoint use_at, uint64_t bytes) const {
  // The queued reads used no later than use_at are a prefix of the issue order.
  const uint64_t queued = queued_through(QueueKey{p_->issue_key(use_at), UINT64_MAX}, by_use_memo_);
  const double total = bytes_ahead_ + static_cast<double>(queued) + static_cast<double>(bytes);
  // Rounded up, with a microsecond for the rounding of ttr() itself (as ttr_bound()).
  return Duration(static_cast<int64_t>(std::ceil(total * scale_ * 1e9 / bytes_per_s_)) + 1000) +
         p_->remote_bound(bytes);
}

double StagingProvider::earliest_issue_s(const StagingClaim& claim) const {
  const TimePoint use_at = use_time(claim);
  // Used after every queued read and no background: where ttr()'s projection of the whole queue
  // runs out (the same arithmetic), O(1) while it is current.
  if (background_writes() == 0 && (queue_.empty() || queue_.rbegin()->first.first <= use_at)) {
    return ttr_snapshot().t;
  }
  const double served = served_now();
  std::vector<PlannedRead>& heap = ttr_heap_;
  heap.clear();
  for (const Key& key : in_flight_keys_)
    heap.push_back({objects_.at(key).left_bytes(served), false});
  // The reads ahead, then one needed read of no bytes: it ends the moment it is issued.
  auto queued = queue_.begin();
  const auto queued_end = queue_.upper_bound({use_at, UINT64_MAX});
  bool issued = false;
  auto next = [&]() -> std::optional<PlannedRead> {
    if (queued != queued_end) {
      return PlannedRead{static_cast<double>((queued++)->second.rec->read_bytes), false};
    }
    if (issued) return std::nullopt;
    issued = true;
    return PlannedRead{0.0, true};
  };
  // No background: the reads ahead alone at the whole rate free a slot no later than with writes.
  return continue_projection_s(heap, {}, 0.0, next, options_.max_reads_in_flight,
                               rate_.bytes_per_s(), 1);
}

Duration StagingProvider::commit_wait(const StagingClaim& claim, Duration ttr) const {
  if (ttr <= Duration::zero()) return Duration::zero();
  // A claim that fetches first starts its reads only after the fetch: no wait argument holds.
  if (remote_extra(claim) > Duration::zero()) return Duration::zero();
  TtrBoundWalk w = ttr_bound_walk();
  const TtrBoundWalk::Range r = w.range(claim);
  if (r.repeated || r.ahead_bytes <= 0) return Duration::zero();
  Duration wait = Duration::zero();
  // Its new reads would wait in the queue behind the reads ahead until a slot frees: a commit
  // until then projects the same, whatever shares the device (rounded down).
  if (r.fresh_bytes > 0) {
    wait = Duration(static_cast<int64_t>(std::floor(earliest_issue_s(claim) * 1e9)));
  }
  const double reads_s = static_cast<double>(ttr.count()) * 1e-9 - write_ahead_s();
  // ttr() is rounded to the nanosecond: a microsecond of slack for that and the sums' rounding.
  // With a background of writes the reads had at least 1 / (1 + background) of the device
  // throughout (bound_scale()): only then do their bytes alone account for the time.
  const double rate = w.bytes_per_s_;
  if (reads_s >= (r.ahead_bytes + static_cast<double>(r.fresh_bytes)) * w.scale_ / rate - 1e-6) {
    wait = std::max(wait, Duration(static_cast<int64_t>(std::ceil(r.ahead_bytes * 1e9 / rate))));
  }
  return wait;
}

StagingProvider::TtrWalk StagingProvider::ttr_walk() const {
  TtrWalk w;
  w.p_ = this;
  w.id_ = ++walk_seq_;
  const double served = served_now();
  for (const Key& key : in_flight_keys_) {
    const ObjectRec& rec = objects_.at(key);
    w.active_.push_back({rec.left_bytes(served), &rec});
    rec.walk_id = w.id_;
    rec.walk_finish_s = std::numeric_limits<double>::quiet_NaN();
  }
  std::make_heap(w.active_.begin(), w.active_.end(), std::greater<>());
  w.next_ = queue_.begin();
  return w;
}

// The loop of project_last_finish_s() (refill, then one read leaves service), stopped where a
// refill would take a read used later than use_at, or once `pending` reads marked `epoch` have
// left service (0: no such stop).
void StagingProvider::TtrWalk::advance(TimePoint use_at, uint64_t epoch, uint64_t pending) {
  const uint32_t slots = p_->options_.max_reads_in_flight;
  const double rate = p_->rate_.bytes_per_s();
  const double background = p_->background_writes();
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
    const double n = static_cast<double>(active_.size() + 1) + background;
    advance_shared(t_, served_, top.first, n, rate);
    top.second->walk_finish_s = t_;
    if (pending > 0 && top.second->mark == epoch && --pending == 0) return;
  }
}

Duration StagingProvider::TtrWalk::ttr(const StagingClaim& claim) {
  const TimePoint use_at = p_->use_time(claim);
  if (last_use_ && use_at < *last_use_) return p_->ttr(claim);
  // Used after every queued read: ttr() answers from the projection of the whole queue it keeps
  // while the state and the clock stand still (so the evaluations of one instant share it). When
  // that projection is current it costs nothing; otherwise it is what this walk would project
  // for the claim's new reads anyway, and only a claim without new reads is walked (it may stop
  // early, below).
  const bool after_queue = p_->queue_.empty() || p_->queue_.rbegin()->first.first <= use_at;
  if (after_queue && p_->snapshot_current()) return p_->ttr(claim);
  // A claim whose objects are all resident needs no read (0, as ttr_reference() answers), and the
  // projection need not advance for it: the next claim's call advances as far as it needs.
  if (std::all_of(claim.objects.begin(), claim.objects.end(),
                  [this](const ManifestEntry& e) { return p_->tier_.resident(e.key); })) {
    return Duration::zero();
  }
  last_use_ = use_at;
  const uint64_t epoch = ++p_->ttr_epoch_;
  // Its reads first: those covered by a read in flight or queued ahead (marked), and its new ones.
  covered_.clear();
  fresh_.clear();
  fresh_keys_.clear();
  uint64_t unfinished = 0;  // covered reads the projection has not yet seen leave service
  for (const ManifestEntry& e : claim.objects) {
    if (p_->tier_.resident(e.key)) continue;
    if (const ObjectRec* rec = p_->covered_read(e.key, use_at)) {
      if (rec->mark == epoch) continue;
      rec->mark = epoch;
      covered_.push_back(rec);
      if (rec->walk_id != id_ || std::isnan(rec->walk_finish_s)) ++unfinished;
      continue;
    }
    // Not covered, or queued for a claim used later (committing this one moves it up to here).
    fresh_.push_back(static_cast<double>(round_up(e.bytes, kBlockBytes)));
    fresh_keys_.push_back(e.key);
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
  if (covered_.empty() && fresh_.empty()) return Duration::zero();
  if (after_queue && !fresh_.empty()) return p_->ttr(claim);
  if (!fresh_.empty()) {
    advance(use_at);  // its new reads start at the checkpoint
  } else if (unfinished > 0) {
    // Only reads already issued or queued ahead: its TTR is when the last of them leaves service,
    // which the projection reaches before the checkpoint when the queue goes on past them (the
    // reads after them change nothing before then). Claims used later continue from there.
    advance(use_at, epoch, unfinished);
  }
  double last = 0;
  uint64_t in_service = 0;  // needed reads in service where the projection stopped
  for (const ObjectRec* rec : covered_) {
    if (rec->walk_id != id_) return p_->ttr_reference(claim);  // not projected: cannot happen
    if (std::isnan(rec->walk_finish_s)) {
      ++in_service;
    } else {
      last = std::max(last, rec->walk_finish_s);
    }
  }
  uint64_t left = in_service + fresh_.size();
  if (left > 0) {
    // From the checkpoint: the reads in service and the claim's new reads.
    std::vector<PlannedRead>& heap = scratch_;
    heap.clear();
    for (const auto& [finish, rec] : active_) heap.push_back({finish, rec->mark == epoch});
    last = continue_projection_s(heap, {served_, t_}, last, fresh_reads(fresh_),
                                 p_->options_.max_reads_in_flight, p_->rate_.bytes_per_s(), left,
                                 p_->background_writes());
  }
  return Duration(std::llround((last + p_->write_ahead_s()) * 1e9)) + p_->remote_extra(claim);
}

}  // namespace tempokv
