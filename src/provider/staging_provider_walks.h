// StagingProvider's two walks over its read queue (staging_provider.h declares them and says what
// they answer): TtrBoundWalk, bounds of ttr() from the queue's prefix sums of bytes, and TtrWalk,
// ttr() of claims taken in use order from one shared projection. Included at the end of
// staging_provider.h; nested classes of StagingProvider, so they see its queue's private types.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "provider/staging_provider.h"

namespace tempokv {

class StagingProvider::TtrBoundWalk {
 public:
  Duration bound(TimePoint use_at, uint64_t bytes) const;
  // Bounds of ttr(claim) from one lookup per object and the prefix sums, no projection: hi is
  // bound() with the bytes of the reads the claim would add; lo is the work-conserving argument
  // turned round: when the claim's last read M (in issue order) is done, every read issued up to
  // it has started, and what is left is in service, at most slots - 1 other reads, each issued
  // before M and so served at least M's bytes since (the reads in service share the rate
  // equally): lo = (bytes issued up to M - (slots - 1) x (largest - M's bytes)) / rate (less a
  // microsecond for rounding; 0 when a key repeats), nearly exact when reads have one size.
  // A claim with no new read also has hi <= (bytes up to M + (slots - 1) x largest) / rate: the
  // reads issued after M share the rate with the claim's last read to finish, so they get at
  // most its bytes each by then. lo = hi = 0 when every object is resident (all_resident).
  // Both add the claim's remote part (remote_extra()); bound() adds remote_bound(bytes).
  struct Range {
    Duration lo{0}, hi{0};
    bool all_resident = true;
    // What the bounds are made of: the bytes of the reads it would add, and of the reads ahead
    // of them (in flight, and queued for use no later than it; the store's writes not counted);
    // repeated: a key appears twice among its new reads (read once; lo is then 0).
    uint64_t fresh_bytes = 0;
    double ahead_bytes = 0;
    bool repeated = false;
  };
  Range range(const StagingClaim& claim);
  // The calibrated aggregate read rate the bounds use (bytes per second).
  double bytes_per_s() const { return bytes_per_s_; }

 private:
  friend class StagingProvider;
  const StagingProvider* p_ = nullptr;
  std::vector<Key> fresh_keys_;  // range()'s scratch
  // queued_through()'s last answer for one kind of key (the walk's state does not change while
  // it is used): the key, the bytes, and where the search ended (the first entry of cum_ after
  // the key), from which the next search of that kind starts.
  struct Memo {
    QueueKey key{};
    uint64_t bytes = 0;
    size_t end = 0;
    bool set = false;
  };
  // The read bytes of the queued reads up to and including key `last`, searched from `memo`'s
  // last answer outwards in doubling steps. The window walk asks of claims in (nearly) use order
  // and of each claim's latest covered read: one memo each (by_use_memo_, covered_memo_), so
  // each kind moves a little from one claim to the next (one memo for both jumped between them).
  uint64_t queued_through(const QueueKey& last, Memo& memo) const;
  mutable Memo by_use_memo_, covered_memo_;
  const std::vector<CumBytes>* cum_ = nullptr;  // the provider's cum_, from head_ on
  size_t head_ = 0;
  uint64_t head_bytes_ = 0;     // cum_[head_ - 1].second: issued since the prefix sums were built
  double bytes_ahead_ = 0;      // in flight and the store's writes in flight
  double in_flight_bytes_ = 0;  // in flight only
  double bytes_per_s_ = 1;
  double scale_ = 1;  // StagingProvider::bound_scale(): the upper bounds' time x this
};

class StagingProvider::TtrWalk {
 public:
  Duration ttr(const StagingClaim& claim);

 private:
  friend class StagingProvider;
  using Active = std::pair<double, const ObjectRec*>;  // (finish progress, read)
  // Advances the shared projection to the checkpoint of use time `use_at`, or only until
  // `pending` reads marked `epoch` (ObjectRec::mark) have left service when that comes first.
  void advance(TimePoint use_at, uint64_t epoch = 0, uint64_t pending = 0);
  const StagingProvider* p_ = nullptr;
  uint64_t id_ = 0;                   // this walk's mark in ObjectRec::walk_id
  Queue::const_iterator next_;        // the first queued read not yet issued in the projection
  std::vector<Active> active_;        // min-heap by finish progress: in service
  double served_ = 0, t_ = 0;         // projection progress and time at the checkpoint
  std::optional<TimePoint> last_use_;  // the use time of the last checkpoint
  std::vector<PlannedRead> scratch_;  // a claim's continuation (continue_projection_s's heap)
  std::vector<double> fresh_;         // a claim's new reads
  std::vector<Key> fresh_keys_;       // and their keys
  std::vector<const ObjectRec*> covered_;  // its reads in flight or queued ahead
};

}  // namespace tempokv
