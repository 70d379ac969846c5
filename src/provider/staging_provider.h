// StagingProvider: owns staging (DESIGN.md §2-§4). It commits claims against the fast tier's
// protected budget, reads what is missing from the SSD store straight into fast-tier memory,
// reports readiness, releases protection, serves the ordinary (demand) path, and answers ttr()
// from a metadata-only projection of its read queue.
//
// Lifecycle of a committed claim: commit() -> kStaging (reads queued) or kStageReady at once;
// kStaging -> kStageReady when its last object is resident and protected (on_ready(OK)), or
// failed by a read error (on_ready(error); the claim is gone). begin_transfer()/end_transfer()
// bracket copies out of the tier; release() (after the copy) or cancel() (any time) end it.
// Protection of a released or cancelled claim holds until its in-flight reads and its copies are
// done (kDraining); then it ends for every object no other committed claim needs. Objects stay
// resident as ordinary LRU cache.
//
// Sharing: an object needed by several committed claims is read once and counted once in the
// budget; it is protected once per claim (the fast tier's protect count) and reserved once while
// its read is outstanding. Reads are coalesced with reads already queued or in flight, demand
// reads included.
//
// Read errors: a failed read fails every committed and ordinary claim waiting for that object
// (each gets on_ready(error) and releases what it held); nothing retries on its own, because the
// controller decides between recommitting and the ordinary path. The object is absent afterwards
// and a later commit or ordinary claim reads it afresh.
//
// Issue order (ProviderOptions::issue_order): by use (IssueOrder::kUse), queued reads are ordered
// by the use time of the earliest claim that needs them (StagingClaim::use_at; demand reads and
// claims without one: the time they were queued), then by when they were queued, and in manifest
// order within a claim; they are issued from the head, at most max_reads_in_flight at once. A read
// already queued moves up when a claim used sooner needs it (commit, or expedite() when a
// committed claim's retrieval comes early). By commit (IssueOrder::kCommit), every claim's reads
// are keyed by the time it commits, as demand reads are: they go behind every read queued, a later
// commit never passes them, and expedite() moves nothing. A read that
// cannot get fast-tier room yet (a demand read while the tier is occupied by protected, reserved,
// filling or held objects) waits in place and later reads may pass it. TTR projects this order: a
// claim's reads go after the queued reads keyed no later than its issue key (issue_key(): by use,
// its use time, and its queued reads move up to it; by commit, now, behind every read queued).
//
// Ordinary room is all-or-nothing (provider_ordinary.cc).
//
// Identity: every claim validates each object's store generation (ObjectInfo::generation). A
// fast-tier copy of another generation is never used for it: evicted when evictable, else the
// claim is refused (FailedPrecondition) until the claims using the copy let it go; a read that
// brings another generation than its claims validated (a re-put landed while it was queued)
// fails them. The runtime then recomputes; no other bytes are ever served under the key.
//
// Invariants (check_invariants() verifies them):
//  * A resident object the provider tracks holds the generation its claims validated.
//  * An object's owners are the committed claims that need it. Resident: protect_count == number
//    of owners. Not resident: reserved iff it has owners, and draining owners only while its read
//    is in flight.
//  * Waiters (ordinary claims) exist only while the object's read is queued or in flight; an
//    ordinary claim holds (fast-tier hold) each of its objects that is resident.
//  * A claim with pending == 0 and not draining is stage-ready (or ordinary-ready).
//  * demand_queued_bytes_ is the charge of queued reads that no committed claim reserves.
//  * protected + reserved + pinned + demand_queued_bytes_ <= capacity whenever an ordinary claim
//    is admitted or a claim committed (a hold of a resident object may briefly break it).
//
// Remote objects (set_remote_source, provider_remote.cc): a claim may name an object the store
// lacks and the remote source holds. prefetch() fetches it into the store for a claim not
// committed yet, reserving nothing (the first stage); a commit reserves it like any object to
// read, joins that fetch or starts one (ObjectRec::fetching; one fetch per object, shared), then
// reads it as usual, checked against the generation the store gave it. A failed fetch fails every
// claim committed on it (on_ready(error)) and drops its reservation. ttr() adds the remote part:
// the source's TTR of objects whose fetch has not started + the store's write of every object not
// in the store; the bounds add a bound of it. The ordinary path refuses such a claim (NotFound).
//
// Threading: every method on the Executor thread; it never blocks. Callbacks run there too and may
// call back in. Destroy it only when no read is in flight (stats().in_flight_reads == 0).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "fasttier/fast_tier.h"
#include "provider/claim.h"
#include "provider/provider_options.h"
#include "provider/provider_stats.h"
#include "provider/rate_calibrator.h"
#include "provider/remote_source.h"
#include "provider/ttr_projection.h"
#include "store/store.h"
#include "tempokv/executor.h"

namespace tempokv {

class StagingProvider {
 public:
  // store and tier must outlive the provider.
  static Result<std::unique_ptr<StagingProvider>> create(Executor& executor, Store& store,
                                                         FastTier& tier,
                                                         const ProviderOptions& options);
  ~StagingProvider();
  StagingProvider(const StagingProvider&) = delete;
  StagingProvider& operator=(const StagingProvider&) = delete;

  // Commits a claim: every object must be in the store with the manifest's size, or held by the
  // remote source (NotFound / FailedPrecondition otherwise; NotFound naming the node held
  // unhealthy when such an object's node is); the extra protected bytes must fit the budget and the tier
  // (ResourceExhausted naming bytes needed and available otherwise). A refusal changes nothing.
  // on_ready is called only when the result is kStaging. FailedPrecondition for a known id.
  // ttr_before (optional): set to ttr(claim) as it was just before the commit, computed only when
  // the commit is not refused (a refused one costs no projection).
  // refusal_text: kCodeOnly makes a refusal a bare ResourceExhausted ("refused") with nothing
  // formatted, for a caller that reads only the code and last_refusal_*_shortfall() (the
  // controller, which may be refused many times per event); kFull names the bytes.
  enum class RefusalText : uint8_t { kFull, kCodeOnly };
  Result<CommitState> commit(const StagingClaim& claim, ReadyCallback on_ready,
                             Duration* ttr_before = nullptr,
                             RefusalText refusal_text = RefusalText::kFull);
  // The ordinary path for a claim that is not committed: resident objects are held in place, the
  // rest read on demand into unprotected room; never uses the protected budget. Returns
  // kOrdinaryReady at once or kOrdinaryReading (then on_ready reports).
  Result<ClaimPhase> start_ordinary(const StagingClaim& claim, ReadyCallback on_ready);

  // Claims may name objects a remote tier holds (remote_source.h) that are not in the store: they
  // are committed like any other, and fetched as their staging. nullptr detaches it (such claims
  // are refused again, NotFound). The source must outlive the provider or be detached first.
  void set_remote_source(RemoteSource* source) { remote_ = source; }
  // The first of two stages for a claim not committed yet (docs/cluster.md, "Two stages"): starts
  // the fetch into the store of each of its objects the remote source alone holds and no fetch is
  // bringing yet, reserving nothing in the fast tier; commit() later joins those fetches. Returns
  // how many fetches it started: 0 when there was none to start (no source, every object local,
  // resident or already being fetched), the cue to commit. The claim is validated as commit()
  // validates it (NotFound / FailedPrecondition, NotFound when a node it needs is held
  // unhealthy); a refusal starts nothing. A fetch that fails fails no claim (none owns it): the
  // object stays absent and the fetch listener hears of it with the claim that started it.
  // Cheap without a source.
  Result<uint32_t> prefetch(const StagingClaim& claim);
  // Whether an object of the claim (not resident) is still being fetched into the store: its
  // read cannot start before the fetch lands, so a commit now would hold room for nothing yet.
  bool awaits_fetch(const StagingClaim& claim) const;
  // Called (on the Executor's thread) when a fetch ends: claims not committed that awaited it may
  // commit now. `prefetcher`: the claim whose prefetch() started it, when no committed claim
  // waited for it (0 otherwise); `status`: OK when it landed, else why it failed (no claim has
  // failed with it: the listener decides what the prefetcher's failure means).
  using FetchListener =
      std::function<void(const Key& key, ClaimId prefetcher, const Status& status)>;
  void set_fetch_listener(FetchListener listener) { fetch_listener_ = std::move(listener); }

  // A copy out of the tier starts / ends (stage-ready or ordinary-ready claims only).
  Status begin_transfer(ClaimId id);
  Status end_transfer(ClaimId id);
  // During a transfer: this object's copy is done, so the claim's protection of it (or, on the
  // ordinary path, its hold) ends now instead of at release(); other claims' protection stays and
  // the object stays resident as cache. The progressive-release variant. NotFound when the claim
  // does not hold the object.
  Status release_object(ClaimId id, const Key& key);
  // Ends a ready claim (normally after its transfer). FailedPrecondition while reads are pending.
  Status release(ClaimId id);
  // Ends a claim in any phase; its protection holds until its in-flight reads and copies finish.
  Status cancel(ClaimId id);
  // A committed claim is now used at `use_at` (its retrieval came sooner than projected): its
  // queued reads move up to that use time where they were queued later (by use; by commit nothing
  // moves). Never moves them back.
  // NotFound for a claim the provider does not know.
  Status expedite(ClaimId id, TimePoint use_at);
  // ProviderOptions::issue_order, as created.
  IssueOrder issue_order() const { return options_.issue_order; }

  // Time until every object of `claim` would be resident and protected if committed now (with
  // its use time): the state-aware projection (ttr_projection.h) in issue order. 0 when all are
  // resident. For a committed claim: the time until its outstanding reads are done. A claim that
  // needs any read also waits for the store's writes in flight (write_ahead_s(): the device serves
  // the writes issued before its reads) and shares the device with the background_writes() the
  // provider learned to expect while reading (those the store issues after the commit). Objects not
  // in the store add remote_extra(): the remote source's time only for those whose fetch has not
  // started (the first stage's laxity, prefetch()), the store's write for every one. No I/O.
  Duration ttr(const StagingClaim& claim) const;
  // The same projection run for this claim alone over the queued reads used no later than it:
  // the definition ttr() must equal. ttr() shares the part before the queue runs out between
  // claims when the whole queue is ahead, and runs this when only part of it is.
  Duration ttr_reference(const StagingClaim& claim) const;
  // An upper bound of ttr() for any claim whose new reads total at most extra_bytes: every
  // outstanding read and write and the new reads moving at the calibrated aggregate rate (reads
  // in service always share the whole rate). O(reads in flight); lets the controller skip claims
  // whose TTU is far beyond it without projecting them.
  Duration ttr_bound(uint64_t extra_bytes) const;
  // ttr_bound(extra_bytes) once every outstanding read has drained: the least it can fall to
  // without new commits (while reads are in service it falls exactly as fast as time passes).
  Duration drained_ttr_bound(uint64_t extra_bytes) const;
  // Per-claim upper bounds of ttr(), for claims taken in nondecreasing use time at one moment:
  // bound(use_at, bytes) for a claim used at use_at that needs at most `bytes` of new reads is the
  // time to move every byte in flight, every byte queued for use no later than use_at and its own
  // at the calibrated rate (ttr() projects exactly those reads, which share the whole rate, so the
  // last of them ends by then). Tighter than ttr_bound() under use-ordered staging: reads queued
  // for later use are not counted. O(log queued reads) per call, from the queue's prefix sums of
  // bytes (exact integers; rebuilt, O(queued reads), only after the queue changed other than by
  // issuing from its head). Valid until the provider's state changes (a walk is used within one
  // evaluation). Any order of use times.
  class TtrBoundWalk;  // staging_provider_walks.h
  TtrBoundWalk ttr_bound_walk() const;
  // The definition TtrBoundWalk::bound() must equal: the same bound from a walk of the whole
  // queue. O(queued reads). For tests.
  Duration ttr_bound_reference(TimePoint use_at, uint64_t bytes) const;
  // ttr() of claims taken in nondecreasing use time at one moment, from one projection of the
  // queue shared by all of them: the projection runs in issue order up to each claim's checkpoint
  // (the first moment a slot is free and the next queued read is used later than the claim, where
  // ttr_reference() would start the claim's new reads), and only the claim's own reads are
  // projected from there. A claim with no new read needs the projection only until its last read
  // leaves service, which may come before its checkpoint: the walk stops there (claims used later
  // continue from there). A claim used after every queued read is answered by ttr() when it has
  // new reads or ttr()'s projection of the whole queue is current (ttr() keeps it while the state
  // and the clock stand still). Equal to ttr_reference() (same arithmetic). A claim used earlier
  // than the one before is answered by ttr(). O(queued reads passed) over all calls of one walk,
  // plus O((reads in service + the claim's reads) log slots) per claim. Valid until the provider's
  // state changes (a walk is used within one evaluation); one walk at a time.
  class TtrWalk;  // staging_provider_walks.h
  TtrWalk ttr_walk() const;
  // How long a commit of `claim` can wait and still leave it ready no later than a commit now, if
  // nothing else is committed meanwhile; `ttr` is ttr(claim) now. The longer of two waits that
  // each leave its projection unchanged:
  // - its new reads would be queued behind the reads ahead of it (in flight, and queued for use
  //   no later than it) until a slot frees: committed any time before that, nothing is
  //   projected differently, with any background of writes. The wait is the earliest that can
  //   be (earliest_issue_s(): the reads ahead alone, no writes beside them), a lower bound like
  //   the next one, so a projection too slow costs a reevaluation, not a late claim;
  // - when the reads ahead all end by its last read, the device moves exactly their bytes and its
  //   own until its TTR (less the store's writes), so its own reads started once the others have
  //   drained end at the same time: the others' bytes at the calibrated rate. With
  //   background_writes() the reads' part of the device time is only known to be at least
  //   1 / bound_scale(), so that test asks that much time of its TTR; when it fails (a read ahead
  //   outlasts it) only the first wait holds.
  // During the wait it holds no budget. The writes in flight are not waited for (writes issued
  // during the wait would go ahead of its reads). 0 for a manifest naming an object twice and for
  // a claim that fetches first. No I/O; TtrBoundWalk::range()'s cost, and earliest_issue_s()'s.
  // Chosen on the trace's seeds 1-10 over the projected slot-free time with the background
  // (C / Demand's 1.028 both, p95 / Demand's 0.995 against 1.005; docs/evaluation.md).
  Duration commit_wait(const StagingClaim& claim, Duration ttr) const;
  // The fixed-rate estimate (tempokv-no-state-ttr): non-resident bytes / options.static_read_bytes_per_s.
  Duration static_ttr(const StagingClaim& claim) const;
  // An upper bound of static_ttr() for any claim whose non-resident bytes total at most bytes.
  Duration static_ttr_bound(uint64_t bytes) const;

  // The last refused commit: by how many bytes it was short of the budget's room
  // (FastTier::budget_shortfall) and of the capacity's room (protected + reserved + pinned + the
  // room owed to demand reads + what it would add, less the capacity); at least one is > 0. The
  // same claim is refused again until budget_freed_bytes() has grown by its budget shortfall and
  // capacity_freed_bytes() by its capacity shortfall: nothing else shrinks them (FastTier::
  // budget_freed_bytes; a protection, reservation, pin or demand read of one of its own objects
  // by someone else takes from the room what it takes from the cost). So the controller need not
  // attempt it again before then. A refusal changes nothing, so both stay exact.
  uint64_t last_refusal_budget_shortfall() const { return last_refusal_budget_shortfall_; }
  // commit()'s refusal check alone, with no store lookup and nothing committed: true when
  // commit(claim) would now be refused for budget or capacity (and then last_refusal_*_shortfall()
  // are set as that refusal would set them), false when it would pass the check. Exact only for a
  // claim whose objects are all in the store with the manifest's sizes, which a caller knows when
  // a commit of the same claim was refused (a refusal comes after the store checks) and
  // store_index_changes() has not moved since. Counts nothing in stats().
  bool refused_now(const StagingClaim& claim);
  // Store::index_changes(): while it stays the same, a claim that passed commit()'s store checks
  // would pass them again.
  uint64_t store_index_changes() const { return store_.index_changes(); }
  uint64_t last_refusal_capacity_shortfall() const { return last_refusal_capacity_shortfall_; }
  // A claim's own share of a commit's cost (claim.h).
  using OwnCost = ClaimOwnCost;
  // The share of the claim last checked by commit() or refused_now(), refused or not.
  OwnCost last_own_cost() const { return last_own_cost_; }
  int64_t budget_room() const { return tier_.budget_room(); }
  int64_t capacity_room() const {
    return tier_.capacity_room() - static_cast<int64_t>(demand_queued_bytes_);
  }
  // Called with an object's key when a claim's share for it may have fallen (OwnCost): it entered
  // protected + reserved (budget_bytes, its charge) or protected + reserved + pinned + owed demand
  // (occupied_bytes), not counting a queued demand read issued into its fill (a move within the
  // sum that leaves the share as it was). After the change; it may read the provider but not
  // change it. One listener; replaces the previous one.
  void set_entry_listener(
      std::function<void(const Key& key, uint64_t budget_bytes, uint64_t occupied_bytes)>
          listener) {
    entry_listener_ = std::move(listener);
  }
  uint64_t budget_freed_bytes() const { return tier_.budget_freed_bytes(); }
  // FastTier::capacity_freed_bytes plus the bytes by which the room owed to queued demand reads
  // fell other than into the tier's own counts (a demand read issued into a fill, or reserved by
  // a commit, moves its bytes within the sum and frees nothing).
  uint64_t capacity_freed_bytes() const {
    return tier_.capacity_freed_bytes() + demand_freed_bytes_;
  }
  std::optional<ClaimPhase> phase(ClaimId id) const;
  ProviderStats stats() const;
  // How often ttr()'s shared projection of the whole queue was built (the benchmark's counter).
  uint64_t ttr_snapshot_builds() const { return snap_builds_; }
  // Verifies the invariants of the header against the fast tier. For tests.
  Status check_invariants() const;
  FastTier& tier() { return tier_; }

 private:
  enum class ReadState : uint8_t { kNone, kQueued, kInFlight };
  using QueueKey = std::pair<TimePoint, uint64_t>;  // (use time, queued sequence)
  struct ObjectRec;
  struct QueuedRead {
    Key key;
    ObjectRec* rec;  // objects_'s record of key (node-stable while the read is queued)
  };
  using Queue = std::map<QueueKey, QueuedRead>;
  // A queued read's key and the read bytes of the queue up to and including it (cum_).
  using CumBytes = std::pair<QueueKey, uint64_t>;

 private:
  struct Member {
    ClaimId claim;
    bool draining;  // the claim is gone but its in-flight read still counts it
  };
  struct ObjectRec {
    // A remote fetch into the store is in flight (read is kNone). Kept while it is, owners or
    // not (a prefetch has none): on_fetch_done() forgets it once it lands with nobody waiting.
    bool fetching = false;
    TimePoint fetch_use_at{};  // the earliest use time of its owners, for its read afterwards
    ClaimId prefetcher = 0;    // the claim whose prefetch() started its fetch (0: a commit did)
    // The store generation its owners and waiters validated: every one of them validated this
    // one (a claim that finds another is refused), and a read that brings another fails them.
    uint64_t generation = 0;
    uint64_t read_generation = 0;  // when in flight: the generation the store's get reads
    uint64_t payload_bytes = 0;
    uint64_t read_bytes = 0;      // payload rounded up to 4 KiB: the read and the allocation
    std::vector<Member> owners;   // committed claims: protected or reserved on their behalf
    std::vector<Member> waiters;  // ordinary claims waiting for the read
    ReadState read = ReadState::kNone;
    Queue::iterator queue_pos;           // when queued
    double served_at_issue = 0;          // when in flight: fluid progress at issue
    // When in flight: its bytes still to move once every read in service has had `served` bytes
    // of progress (served_now()).
    double left_bytes(double served) const {
      return std::max(0.0, static_cast<double>(read_bytes) - (served - served_at_issue));
    }
    mutable uint64_t mark = 0;           // ttr(): the projection that needs it
    // ttr()'s shared projection (snapshot version snap_version): when this read finishes, in
    // seconds from now, or NaN when it is still in service where the queue runs out.
    mutable double snap_finish_s = 0;
    mutable uint64_t snap_version = 0;
    // TtrWalk (walk walk_id): when this read finishes, in seconds from now, or NaN while it is
    // in service at the walk's checkpoint.
    mutable double walk_finish_s = 0;
    mutable uint64_t walk_id = 0;
  };
  // The reads in flight and the queue projected (as in ttr_projection.h) up to the first moment a
  // slot is free and the queue is empty: where any claim's new reads would start. Rebuilt when
  // the queue, the reads in flight, the rate or the clock changed since.
  struct TtrSnapshot {
    uint64_t version = 0;  // state_version_ it was built at; 0: never
    TimePoint at{};
    double served = 0;  // projection progress and time where the queue runs out
    double t = 0;
    std::vector<std::pair<double, const ObjectRec*>> active;  // (finish progress, read) in service
  };
  struct ClaimRec {
    bool ordinary = false;
    std::vector<Key> keys;        // manifest order, deduplicated
    std::vector<Key> held;        // ordinary: objects it holds in the tier
    uint32_t pending = 0;         // objects not yet resident and protected / held
    uint32_t transfers = 0;       // begin_transfer without end_transfer
    uint32_t draining_reads = 0;  // in-flight reads that still count it
    bool draining = false;
    bool retired = false;  // its objects were let go
    bool admitted = true;  // ordinary: holds its objects and queued its reads
    std::vector<uint64_t> payload_bytes;  // ordinary, until admitted: keys' payload bytes
    std::vector<uint64_t> generations;    // ordinary, until admitted: keys' store generations
    ReadyCallback on_ready;
  };
  struct Validated {
    std::vector<Key> keys;
    std::vector<uint64_t> payload_bytes;
    std::vector<uint64_t> generations;  // the store's generation of each key at validation
  };

  StagingProvider(Executor& executor, Store& store, FastTier& tier, const ProviderOptions& options);

  // The generation validated for an object not in the store yet: fetched from the remote source
  // (the store's generations start at 1).
  static constexpr uint64_t kNotStoredYet = 0;
  // staging_provider.cc
  // Fills v (cleared first; a reused scratch allocates nothing once grown). remote_ok: an object
  // the store lacks and the remote source holds is valid (generation kNotStoredYet).
  Status validate_claim(const StagingClaim& claim, Validated& v, bool remote_ok);
  // What committing the validated keys would add to the budget and occupy (the room owed to
  // admitted demand reads included), and whether that is refused now (sets last_refusal_*).
  ProtectCost commit_cost(const Validated& v) const;
  bool refuses(const ProtectCost& cost);
  ObjectRec& object(const Key& key, uint64_t payload_bytes, uint64_t generation);
  // OK when a claim that validated `generation` of key may use what the provider has of it: no
  // fast-tier copy or one of that generation (a stale evictable copy is evicted here), and no
  // staging of another generation for other claims. FailedPrecondition naming both otherwise.
  Status usable(ClaimId id, const Key& key, uint64_t generation);
  // Queues the object's read for use at use_at, or moves its queued read up to it.
  void enqueue(const Key& key, ObjectRec& rec, TimePoint use_at);
  // enqueue() without counting a coalesced read: queues it, or moves its queued read up.
  void place(const Key& key, ObjectRec& rec, TimePoint use_at);
  TimePoint use_time(const StagingClaim& claim) const { return issue_key(claim.use_at); }
  // The queue key of reads for use at `use_at` if queued now: that time by use (now without one),
  // now by commit (behind every read queued).
  TimePoint issue_key(std::optional<TimePoint> use_at) const;
  // The object's record when a read already covers it for a claim used at use_at: one in flight,
  // or one queued for use no later than use_at (a read queued for later use would move up to it
  // instead: that counts as a new read). nullptr otherwise. The TTR projections' shared test.
  const ObjectRec* covered_read(const Key& key, TimePoint use_at) const;
  // Its two halves: the object's record when a read of it is queued or in flight (nullptr
  // otherwise; such an object is not resident: check_invariants()), and whether that read covers
  // a claim used at use_at.
  const ObjectRec* read_of(const Key& key) const;
  static bool covers(const ObjectRec& rec, TimePoint use_at) {
    return rec.read == ReadState::kInFlight || rec.queue_pos->first.first <= use_at;
  }
  void flush_callbacks();
  // Ordinary admission (provider_ordinary.cc).
  uint64_t ordinary_extra_bytes(const ClaimRec& c) const;
  bool ordinary_fits(uint64_t extra_bytes) const;
  void admit_ordinary(ClaimId id, ClaimRec& c);
  void admit_waiting_ordinary();
  // The charge a queued read owes to demand_queued_bytes_ (0 unless queued and unreserved).
  uint64_t demand_charge(const ObjectRec& rec) const;
  // provider_release.cc
  void became_ready(ClaimId id, ClaimRec& c);
  void end_claim(ClaimId id, ClaimRec& c);
  void retire(ClaimId id, ClaimRec& c);
  void drop_member(const Key& key, ClaimId id, bool ordinary);
  void maybe_forget(const Key& key);
  void maybe_erase_claim(ClaimId id);
  void finish_draining(ClaimId id);
  void fail_claim(ClaimId id, const Status& status);
  // provider_reads.cc
  void pump();
  void issue(const Key& key);
  void on_read_done(const Key& key, Result<size_t> result);
  void note_in_flight_change();
  double served_now() const;
  // What shares the device with the reads in the fluid model and the calibration: the reads in
  // flight, and the store's writes in flight when writes are seen (write_cost > 0).
  uint32_t device_in_flight() const;
  // The store's writes in flight when writes are seen (write_cost > 0), else 0.
  uint32_t seen_writes_in_flight() const;
  // The store's write listener: a write was issued (started) or completed.
  void on_store_write(uint64_t bytes, bool started);
  // Seconds the device needs for the store's writes in flight (the calibrated write cost x their
  // bytes at the calibrated rate): TTR adds them when the claim needs any read (the device serves
  // the writes issued before the claim's reads). 0 without writes.
  double write_ahead_s() const;
  // The writes the projections expect to share the device with the reads throughout, as that
  // many more requests in service: the learned mean of the seen writes in flight while reads are
  // (RateCalibrator::writes_while_reading; the store keeps issuing writes while a claim reads, so
  // the ones issued after a commit share the device with its reads too). The writes in flight at
  // the commit still go ahead in full (write_ahead_s()): under a steady stream of writes the
  // projection counts the one in flight twice, and after a burst that stops it expects more;
  // chosen over counting only the in-flight writes beyond the background, or only what is left of
  // each, by the trace's TTR error on seeds 1-10 (docs/evaluation.md). At most max_reads_in_flight;
  // 0 when writes are not seen.
  double background_writes() const;
  // What the upper bounds of TTR multiply their time by for that background: with n >= 1 reads in
  // service, a read's pace is at least n / (n + background) of the whole rate's share.
  double bound_scale() const;
  // The earliest a new read of `claim` would be issued if it committed now, in seconds from now:
  // the reads ahead of it (in flight, and queued for use no later than it) projected alone at the
  // calibrated rate, with no background of writes, until they are issued and a slot is free.
  // O(reads ahead); O(1) from ttr()'s projection of the whole queue for a claim used after every
  // queued read while no background is learned.
  double earliest_issue_s(const StagingClaim& claim) const;
  // provider_remote.cc
  // The store lacks it and the remote source holds it (false without a source).
  bool remote_only(const Key& key) const;
  // What ttr() adds for the claim's objects not in the store yet: the source's TTR of those whose
  // fetch has not started (its bound when a node is held unhealthy: commit() refuses the claim
  // then) + the store's write of every such object's bytes. A fetch in flight adds no wait: a
  // commit cannot hasten it, so the second stage is timed by the local part alone. 0 without
  // such objects.
  Duration remote_extra(const StagingClaim& claim) const;
  // An upper bound of remote_extra() for claims with at most `bytes` of objects (0 without a
  // source): the bounds of ttr() add it.
  Duration remote_bound(uint64_t bytes) const;
  // commit()'s check of a validated claim's remote objects: NotFound naming them when a node one
  // needs is held unhealthy (a load error: the engine recomputes), counted in stats().invalid.
  Status check_remote(const StagingClaim& claim, const Validated& v);
  // Starts the object's fetch (or joins the one in flight) for a claim used at use_at (a
  // prefetch: for no claim yet, its read queued at the first owner's use time).
  void fetch(const Key& key, ObjectRec& rec, TimePoint use_at);
  void on_fetch_done(const Key& key, Result<uint64_t> generation);
  // provider_ttr.cc
  const TtrSnapshot& ttr_snapshot() const;
  // snap_ was built at this state and this instant: ttr_snapshot() costs nothing now.
  bool snapshot_current() const;
  // provider_walks.cc
  // Every removal of a queued read goes through here: a read issued from the head keeps cum_.
  Queue::iterator queue_erase(Queue::iterator it);
  // Every read queued or moved up goes through here (place()), once it is in queue_: at_tail, a
  // new read queued after every other, extends cum_; else cum_ is stale.
  void note_queued(const ObjectRec& rec, bool at_tail);
  // cum_ brought up to date with queue_ (rebuilt when stale).
  void refresh_cum() const;

  Executor& executor_;
  Store& store_;
  FastTier& tier_;
  ProviderOptions options_;
  RemoteSource* remote_ = nullptr;  // set_remote_source()
  RateCalibrator rate_;
  std::unordered_map<Key, ObjectRec> objects_;  // objects with owners, waiters or a read
  std::unordered_map<ClaimId, ClaimRec> claims_;
  Queue queue_;                      // reads not yet issued, in issue order
  uint64_t queue_seq_ = 0;
  uint64_t queued_bytes_ = 0;        // read_bytes of every read in queue_
  uint64_t max_read_bytes_ = 0;      // the largest read_bytes of any object seen (never falls)
  // Prefix sums of queue_'s read bytes in issue order (TtrBoundWalk): entry i is the i-th queued
  // read's key and the bytes of reads 0..i, for the reads from cum_head_ on (the ones before were
  // issued from the head since it was built; cum_head_bytes_ is their bytes). cum_stale_: a read
  // was queued, moved up or removed other than from the head; rebuilt when next asked.
  mutable std::vector<CumBytes> cum_;
  mutable size_t cum_head_ = 0;
  mutable uint64_t cum_head_bytes_ = 0;
  mutable bool cum_stale_ = true;
  uint64_t demand_queued_bytes_ = 0;  // fast-tier charge of queued reads nobody reserves
  uint64_t demand_freed_bytes_ = 0;   // capacity_freed_bytes()'s share
  uint64_t last_refusal_budget_shortfall_ = 0;
  uint64_t last_refusal_capacity_shortfall_ = 0;
  OwnCost last_own_cost_;
  std::function<void(const Key&, uint64_t, uint64_t)> entry_listener_;
  bool entries_muted_ = false;  // pump(): a demand read issued into its fill is no entry
  std::list<ClaimId> ordinary_waiting_;  // ordinary claims not yet admitted, in arrival order
  std::vector<Key> in_flight_keys_;  // reads issued, not completed
  uint64_t writes_in_flight_ = 0;        // the store's writes issued, not completed
  uint64_t write_bytes_in_flight_ = 0;   // and their bytes
  // Fluid model of the reads in flight (processor sharing at the calibrated rate, with the store's
  // writes in flight when seen): bytes each has received since the provider started, as of
  // fluid_last_.
  double served_ = 0;
  TimePoint fluid_last_{};
  bool pumping_ = false;
  bool repump_ = false;
  mutable uint64_t ttr_epoch_ = 0;
  mutable uint64_t walk_seq_ = 0;  // TtrWalk ids
  uint64_t state_version_ = 1;  // bumped whenever the queue or the reads in flight change
  mutable TtrSnapshot snap_;
  mutable uint64_t snap_builds_ = 0;
  mutable std::vector<std::pair<double, const ObjectRec*>> snap_scratch_;  // ttr_snapshot()'s
  mutable std::vector<double> ttr_fresh_;       // ttr()'s scratch
  mutable std::vector<Key> ttr_fresh_keys_;
  mutable std::vector<PlannedRead> ttr_heap_;
  mutable std::vector<RemoteSource::Object> remote_scratch_;  // remote_extra()'s
  mutable std::vector<Key> fetched_scratch_;  // remote_extra()'s objects already being fetched
  FetchListener fetch_listener_;
  std::vector<std::pair<ReadyCallback, std::pair<ClaimId, Status>>> callbacks_;
  Validated validated_;                                    // commit()'s scratch
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // store callbacks check it
  ProviderStats stats_;
};

}  // namespace tempokv

#include "provider/staging_provider_walks.h"  // TtrBoundWalk, TtrWalk
