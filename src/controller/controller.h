// Controller: owns the claims and decides when to try committing them (DESIGN.md §3). It never
// changes a runtime's order; it combines the runtime's TTU (aged by elapsed time) with the
// provider's latest TTR through a CommitPolicy, and asks the StagingProvider to commit. The
// provider decides whether a commit succeeds.
//
// Several runtimes (data-parallel engines of one node) may share one controller: each reports
// its own waiting order under its runtime id, and a claim's rank is its position in the order of
// the runtime that last listed it (Queue-K = among the first K of that runtime's queue).
//
// Rules kept here:
//  * A claim whose retrieval is requested is attempted at once (commit, else ORDINARY), then
//    eligible planned claims in attempt order: by rank, runtimes interleaved (rank 0 of every
//    runtime in runtime-id order, then rank 1, ...), then claims in no order (in report order). A
//    refused or ineligible claim never blocks the others.
//  * Timed policies: after a successful commit the walk starts again from the first claim not yet
//    attempted in this evaluation, because the commit may have raised the TTR of claims walked
//    before it (the paper: later decisions use the provider's updated staging state).
//  * Retrieval requested + commit refused -> ORDINARY (the provider's demand path). Commit and
//    ORDINARY are mutually exclusive; a committed claim is never revoked by new estimates.
//  * Reevaluation on every estimate/order update, staging completion and capacity release, and on
//    a periodic tick while planned claims exist (so a simulation with nothing pending ends). Timed
//    policies also wake exactly when a planned claim's projected laxity reaches zero, so commits
//    are not late by up to a tick (the paper relies on the tick alone).
//  * TempoKV (state-aware TTR) lets an eligible claim that the budget would take wait while the
//    reads ahead of it drain, when its own reads started after them would end when they would
//    end if it committed now (StagingProvider::commit_wait; ControllerOptions::
//    wait_for_reads_ahead): it is ready no later and holds nothing meanwhile. It wakes when they
//    should have drained and decides again; its timing error is judged from where it first waited.
//    "tempokv-no-wait" (make_controller) commits at once, without the wait.
//  * Every state change goes through transition(), which aborts on an illegal one.
//
// Cost of an evaluation: controller_eval.cc explains how the index bounds the work.
//
// Accounting: the integral of protected + reserved fast-tier bytes over time (C of DESIGN.md §5),
// per-claim timelines, refused commits.
//
// Threading: Executor thread only. Callbacks run there; they may call back in.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <memory_resource>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/node_pool.h"
#include "controller/byte_time_meter.h"
#include "controller/claim_state.h"
#include "controller/commit_policy.h"
#include "controller/controller_rec.h"
#include "controller/controller_types.h"
#include "controller/error_feedback.h"
#include "provider/staging_provider.h"
#include "tempokv/executor.h"
#include "tempokv/retrieval.h"  // RetrievalAnswer, RetrievalPath, RetrievalCallback

namespace tempokv {

class Controller {
 public:
  Controller(Executor& executor, StagingProvider& provider, std::unique_ptr<CommitPolicy> policy,
             ControllerOptions options = {});
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // A reusable-KV hit of a waiting request: a metadata-only claim. A claim larger than the
  // protected budget is never committed: it takes the ordinary path when its retrieval is
  // requested (the paper's demand path needs no protection). InvalidArgument for an empty
  // manifest or one larger than the fast tier; FailedPrecondition for a live id (a released one
  // may be reported again once the provider has let go of it).
  Status report(ClaimId id, std::vector<ManifestEntry> manifest, Duration ttu);
  // How many leading entries of `manifest` one claim may hold and still be committed: the
  // longest prefix whose footprint (distinct objects, whole tier slots) fits the protected
  // budget. A runtime claims that prefix rather than a whole hit that never could be staged.
  size_t committable_prefix(std::span<const ManifestEntry> manifest) const;
  // New TTU estimates (each timestamped now) and runtime `runtime`'s waiting order (replacing
  // that runtime's previous one; other runtimes' orders stay), then one reevaluation. Unknown ids
  // in ttus are errors (nothing is applied then); unknown ids in the order are skipped. Claims
  // past PLANNED ignore new estimates.
  // lower_bound (empty, or one flag per estimate): that TTU is only a lower bound of the true one
  // (the adapter projected no further than ttu_horizon()). A claim is never committed on a lower
  // bound: when it would be eligible by it, the controller asks the runtime's reviser (below)
  // for an exact estimate instead, and commits on that.
  Status update(std::span<const std::pair<ClaimId, Duration>> ttus,
                std::span<const ClaimId> waiting_order, uint32_t runtime = 0,
                std::span<const uint8_t> lower_bound = {});
  // How runtime `runtime` revises its estimates outside its own order updates (normally one more
  // update() with the same order); called from a posted task, never inside an evaluation, at
  // most once per instant per runtime. An empty function removes it. Without a reviser a claim
  // whose TTU is a lower bound is treated as exact.
  void set_reviser(uint32_t runtime, std::function<void()> revise);
  // New TTU estimates only, every runtime's order unchanged, then one reevaluation.
  Status update_estimates(std::span<const std::pair<ClaimId, Duration>> ttus);
  Result<RetrievalAnswer> request_retrieval(ClaimId id, RetrievalCallback on_ready);
  Status begin_transfer(ClaimId id);
  // The copy is done: the claim is released and its protection ends. Also ends the transfer of a
  // claim cancelled while it was being copied.
  Status end_transfer(ClaimId id);
  // One object's copy to the device is done. With progressive_release its protection ends now;
  // otherwise nothing changes (it ends with the transfer).
  Status object_transferred(ClaimId id, const Key& key);
  // Ends a claim. A claim being copied (TRANSFERRING, or ORDINARY after begin_transfer) stays in
  // its state, marked cancelled, until the copier reports end_transfer: only then can no copy
  // touch its objects, and its protection (or hold) ends. Any other claim is RELEASED now.
  Status cancel(ClaimId id);

  // When this claim's KV is projected to be stage-ready, from now: 0 once ready (or on a path
  // that needs no staging); the provider's projection of its remaining reads while STAGING; its
  // TTR if committed now while PLANNED. What the runtime adapter's TTU projection uses for the
  // requests ahead of a target. NotFound for an unknown claim.
  Result<Duration> ready_in(ClaimId id) const;
  // The margin error feedback currently adds to the laxity rule (zero without samples).
  Duration feedback_margin() const { return feedback_.margin(); }
  // How far ahead a TTU can matter now: a planned claim used later than this cannot become
  // eligible before its TTU is revised (twice the policy's TTR window for the largest planned
  // footprint, plus `slack`: the time TTRs may move before the runtime's next update, which the
  // runtime knows best). Duration::max() for policies that do not look at TTU, or when the window
  // is unknown. A runtime adapter projects exact TTUs up to here and reports a lower bound beyond;
  // a bound that comes into the window sooner is revised on request (set_reviser).
  Duration ttu_horizon(Duration slack = kMaxHorizonSlack) const;
  static constexpr Duration kMaxHorizonSlack = std::chrono::seconds(5);
  // How many of the claims used soonest the chain of deadlines reads (0 without one): their TTUs
  // matter wherever they lie, so a runtime adapter projects them exactly past ttu_horizon().
  size_t chain_span() const {
    return options_.chain_deadlines && policy_->state_aware() ? options_.chain_length : 0;
  }
  Result<ClaimInfo> info(ClaimId id) const;
  std::vector<ClaimInfo> claims() const;
  ControllerStats stats() const;
  std::string_view policy_name() const { return policy_->name(); }
  TimePoint now() const { return executor_.now(); }
  // Forgets released claims (long-running services); their timelines are gone afterwards.
  void forget_released();
  // For tests: every planned claim refused before, with the store as its share was measured,
  // has a bound of its share (Rec::cost) no larger than its share now, and one whose refusal
  // stands is refused by the provider's check now (StagingProvider::refused_now). Internal error
  // naming the claim otherwise.
  Status check_refusal_bounds();

 private:
  // The indexes of planned claims (below): by a time, or by a bound of a share of a room.
  using UseIndex = std::pmr::set<std::pair<TimePoint, ClaimId>>;
  using RoomIndex = std::pmr::set<std::pair<int64_t, ClaimId>>;
  static constexpr uint32_t kUnranked = kUnrankedClaim;
  // One claim's record (controller_rec.h).
  using Rec = ControllerClaim;
  // Where a claim sits in the attempt order: rank, then runtime id; unranked claims last, in
  // report order.
  struct AttemptKey {
    uint32_t rank;
    uint32_t runtime;
    uint64_t seq;
    auto operator<=>(const AttemptKey&) const = default;
  };

  // controller.cc
  Rec* find(ClaimId id);
  void transition(Rec& r, ClaimState to);
  void set_ttu(Rec& r, Duration ttu, TimePoint now);
  // Before an update at `now`: keeps the use time an update at an earlier instant projected.
  static void keep_prior_use(Rec& r, TimePoint now);
  // The use time projected by the last update before `now` (ClaimInfo::
  // projected_use_before_request); unset when no update came before now.
  static std::optional<TimePoint> use_projected_before(const Rec& r, TimePoint now);
  void set_order(uint32_t runtime, std::span<const ClaimId> waiting_order);
  void unindex(Rec& r);
  void reevaluate();
  void account();
  void schedule_tick();
  void schedule_wake();
  // controller_eval.cc
  void evaluate_once();
  void evaluate_untimed();
  void evaluate_timed_indexed();
  void evaluate_timed_full();
  // Calls fn(rec) for planned claims in attempt order: those ranked below rank_limit, and the
  // unranked ones too when rank_limit is kAnyRank. fn returns false to stop the walk.
  template <typename Fn>
  void for_each_in_attempt_order(uint32_t rank_limit, Fn&& fn);
  static AttemptKey attempt_key(const Rec& r);
  Duration laxity(Rec& r, TimePoint now);
  // The policy's laxity of `r` at `now` for given TTRs (bounds of them give bounds of it: a
  // policy's laxity is nonincreasing in both).
  Duration laxity_given(const Rec& r, TimePoint now, Duration ttr, Duration static_ttr) const;
  // Timed: laxity <= 0 -> one attempt (true when committed); else notes the wake-up.
  // known_ttr: the claim's exact TTR now, when the caller has it (the evaluation's shared walk).
  // eligible: the caller has bounded its laxity at most zero (TtrBoundWalk::range) in this pass,
  // with nothing changed since: no TTR is needed unless the commit succeeds.
  bool consider_timed(Rec& r, TimePoint now, std::optional<Duration> known_ttr = {},
                      bool eligible = false);
  void note_wake(TimePoint t);
  // A claim would be eligible by its lower-bound TTU: asks its runtime's reviser for an exact
  // one (posted). False when that runtime has no reviser (the bound is then used as it is).
  bool request_revision(const Rec& r);
  // controller_chain.cc
  // When a timed claim must be ready: its use, less its lead (Rec::lead).
  static TimePoint deadline(const Rec& r) { return r.use_at - r.lead; }
  // ControllerOptions::chain_deadlines, at the start of each pass of a state-aware policy's
  // evaluation: sets every claim's lead anew and returns the latest use time of a claim given a
  // lead (TimePoint::min() when none), so the window walk reaches it. It looks at the
  // ControllerOptions::chain_length planned claims used soonest, not counting those sent to the
  // ordinary path; its members are those of them the budget would take now
  // (StagingProvider::refused_now: the provider's state alone, not the index's bookkeeping of
  // refusals, so the full scan finds the same members; a claim whose refusal stands is refused now)
  // that would add reads (`own`: the time its new reads take at the calibrated rate,
  // TtrBoundWalk::range's fresh bytes). Taken in use order (id order among equal use times, which
  // the indexes keep, so that a batch used at one instant is gathered in `chain_length` steps; the
  // report order when ids come in order), from the last: its deadline is its use; each earlier
  // one's is the earlier of its use and the next one's deadline less the next one's own reads. The
  // same leads whichever way the pass walks (the index's walk or the full scan): by_use_, waiting_,
  // resting_ and parked_by_use_ hold every planned claim between them. A claim used later than the
  // last of them moves no deadline (also a bound on the cost per pass), and a shared object counts
  // in the own reads of each member that would add it.
  TimePoint chain_deadlines(StagingProvider::TtrBoundWalk& bounds);
  // controller_refusals.cc
  // Refused before, no object has left the store since its share was measured, and the lower
  // bound of that share (Rec::cost) exceeds the budget's room or the capacity's
  // (StagingProvider::budget_room, capacity_room): an attempt would be refused. Such a
  // claim is not looked at (no TTR, no attempt, no wake-up) until the room grows to it; the
  // evaluation after that looks again. (An entry of one of its objects lowers the bound by what it
  // takes from the room, so only room freed ends it.)
  bool refusal_stands(const Rec& r) const;
  // A planned claim in by_use_ whose refusal stands leaves it for the parked sets, keyed by the
  // bound of its share the room must reach (evaluate_timed_indexed; its TTU is still kept up to
  // date). find_fitting() lists in fitting_ every parked claim whose refusal no longer stands
  // (its bound fits both rooms), in attempt order; each pass walks them as the window walk would
  // have (walk_claim()) when their turn in the attempt order comes, and puts them back into
  // by_use_. So a pass looks at exactly the claims it would have looked at, without stepping over
  // the refused ones at every event, and the claims that fit behind the pass's commit (which
  // usually takes the room they fitted) are not walked at all.
  void park(Rec& r);
  void find_fitting();
  void unpark(Rec& r);
  // A parked claim whose bound fits both rooms, before it goes back into by_use_: when no object
  // has left the store since its share was measured (so a commit would pass the store checks
  // again), the provider's refusal check alone (StagingProvider::refused_now, no store lookup)
  // measures its share and decides whether a commit would be refused now; if so, that is counted
  // as a refused attempt and it is parked again (true) instead of being walked, projected and
  // attempted only to be refused. A claim whose TTU is a lower bound goes back as before (the
  // walk may ask its runtime for a revision). Nothing a commit could decide changes.
  bool refused_again(Rec& r);
  // Records the share the provider last measured (StagingProvider::last_own_cost) as r's bound,
  // and lists r under its objects (once) so that their entries lower it.
  void note_cost(Rec& r);
  // The provider's entry listener: lowers the bound of every planned claim listed under key (and
  // re-keys it if parked).
  void on_entry(const Key& key, uint64_t budget_bytes, uint64_t occupied_bytes);
  // controller_resting.cc
  // The index an indexed claim is in: resting_, waiting_ or by_use_.
  UseIndex& index_of(const Rec& r);
  // A claim of by_use_ found waiting by the window walk leaves it for waiting_ (same key) until
  // its wait ends, unless it was ever refused (its refusal could come to stand meanwhile, which
  // the walk must see at every pass to park it); release_waits() puts back those whose wait has
  // ended; note_held() notes the wake-up the window walk would have noted for them (the earliest
  // end of a held claim keyed inside the window). unhold(): it leaves the index (unindex, park).
  void hold(Rec& r);
  void unhold(Rec& r);
  void release_waits(TimePoint now);
  void note_held(TimePoint horizon);
  // An indexed planned claim whose objects are all resident leaves by_use_ for resting_ (same
  // key); unrest() puts it back (an object of its was evicted: on_evicted()).
  void rest(Rec& r);
  void unrest(Rec& r);
  void on_evicted(const Key& key);
  // The laxity of a claim with nothing to read (TTR and static TTR zero) used `ttu` from now.
  Duration resting_laxity(const Rec& r, Duration ttu) const;
  // A resting claim walked by evaluate_timed_indexed: a candidate (laxity <= 0) or a wake-up, as
  // the by_use_ walk would decide for it.
  void consider_resting(Rec& r, TimePoint now, TimePoint horizon, Duration drained);
  // evaluate_timed_indexed's share of resting_: every claim in the window that is a candidate,
  // and the claims whose wake-up could be the earliest (laxity is nondecreasing in TTU, so the
  // walk stops where the key alone places every later claim's wake-up no earlier than next_wake_).
  void walk_resting(TimePoint now, TimePoint horizon, Duration drained);
  // controller_claims.cc
  // Tries to commit; true when committed (STAGING or STAGE_READY), when the claim ended (it
  // cannot be staged), or when its first stage started instead (remote_prefetch): the staging
  // state changed, so a timed evaluation walks again.
  // known_ttr: its exact TTR now when known; else the provider projects it, only if not refused.
  bool try_commit(Rec& r, std::optional<Duration> known_ttr = {});
  void start_ordinary(Rec& r);
  void on_provider_ready(ClaimId id, Status status);
  void finish(Rec& r, const Status& failure);
  // Once a claim committed before its retrieval request is both ready and requested: its timing
  // error goes to the error feedback.
  void note_timing(Rec& r);
  // feedback_.record(), and a reevaluation posted when the margin moved.
  void record_error(Duration error, Duration read);
  // A reevaluation at this instant once the caller is done (posted; one however many ask).
  void post_reevaluation();
  // The provider's fetch listener saw the first-stage fetch of `key` that claim `id` started fail.
  void note_prefetch_failure(const Key& key, ClaimId id, const Status& status);
  bool reevaluation_posted_ = false;
  // A timed policy's claim still planned when its retrieval is requested: the use came before the
  // projected use less the TTR, and the claim would have been late by (projected use − request)
  // at zero laxity. That error goes to the feedback too (missed_by, recorded by note_timing once
  // the claim is ready or released, with how late it was: committed at its use, it is late by its
  // read), else the feedback would see only the claims estimated well enough to commit in time.
  void note_missed(Rec& r);
  // Between begin_transfer and end_transfer (either path).
  static bool copying(const Rec& r);

  Executor& executor_;
  StagingProvider& provider_;
  std::unique_ptr<CommitPolicy> policy_;
  ControllerOptions options_;
  std::unordered_map<ClaimId, Rec> claims_;
  std::map<uint32_t, std::vector<ClaimId>> orders_;  // each runtime's latest waiting order
  std::map<uint32_t, uint64_t> order_reported_;  // next_seq_ when that order was last applied
  // Indexes of PLANNED claims (a claim leaves them when it leaves PLANNED). A claim moves between
  // them several times an event (park, hold, rest): their nodes come from one pool.
  NodePool pool_;
  std::map<uint64_t, ClaimId> unranked_;            // in no runtime's order, by report order
  // By index_at: a lower bound of the use time, close to it (set_ttu).
  UseIndex by_use_{&pool_};
  struct ClaimsOfKey {  // (id, generation); compacted when it reaches compact_at
    std::vector<std::pair<ClaimId, uint64_t>> claims;
    size_t compact_at = 8;
  };
  // Planned claims whose refusal stands, each in both: by the bound of its share of the budget's
  // room, and by the bound of its share of the capacity's room (park()).
  RoomIndex parked_budget_{&pool_}, parked_capacity_{&pool_};
  // The same claims by use time (chain_deadlines() counts them among the claims used soonest).
  UseIndex parked_by_use_{&pool_};
  // By key, the refused claims listed under it, as (id, cost_gen) (note_cost(), on_entry()); stale
  // entries are dropped when the key enters the sums or the list is compacted.
  std::unordered_map<Key, ClaimsOfKey> costed_by_key_;
  uint64_t cost_seq_ = 0;
  uint64_t parked_store_changes_ = 0;  // StagingProvider::store_index_changes() at the last unpark
  // Planned claims whose objects are all resident (TTR 0), by index_at like by_use_ but outside
  // it, so the window walk does not project them at every pass (walk_resting() looks only at the
  // few that can matter). By key, the claims set aside with that object, as (id, rest_gen); stale
  // entries are dropped when the key is evicted or the list is compacted.
  UseIndex resting_{&pool_};
  std::unordered_map<Key, ClaimsOfKey> resting_by_key_;
  // Planned claims waiting for the reads ahead of them (hold()), by index_at like by_use_ but
  // outside it: the dense case had ~100 of them in the window at every pass, each walked only to
  // note its wake-up. wait_ends_: the same claims by (wait_until, id).
  UseIndex waiting_{&pool_};
  UseIndex wait_ends_{&pool_};
  uint64_t rest_seq_ = 0;
  std::multiset<uint64_t> planned_footprints_;      // for the largest one
  uint64_t planned_ = 0;
  uint64_t refused_planned_ = 0;  // planned claims refused at least once: they may fit later
  uint64_t next_seq_ = 0;
  uint64_t order_gen_ = 0;
  uint64_t eval_id_ = 0;
  bool evaluating_ = false;
  bool again_ = false;
  TimerHandle tick_;
  bool tick_armed_ = false;
  TimePoint tick_at_{};  // when the armed tick fires
  std::optional<TimePoint> next_wake_;  // earliest projected zero laxity of a planned claim
  TimerHandle wake_;
  struct Candidate {  // evaluate_timed_indexed: a claim to attempt, and its TTR when walked
    AttemptKey key;
    ClaimId id;
    std::optional<Duration> ttr;
    bool eligible = false;  // its laxity is bounded at most zero (consider_timed's `eligible`)
    bool operator<(const Candidate& o) const { return std::tie(key, id) < std::tie(o.key, o.id); }
  };
  std::vector<Candidate> candidates_;  // scratch of evaluate_timed_indexed
  std::vector<Candidate> fitting_;     // find_fitting(): parked claims that fit, in attempt order
  // What walk_claim() shares within one pass of evaluate_timed_indexed.
  struct WalkPass {
    TimePoint now, horizon;
    Duration drained;
    StagingProvider::TtrBoundWalk& bounds;
    std::optional<StagingProvider::TtrWalk>& exact;  // made by exact_walk() at its first use
    const StagingProvider& provider;
    StagingProvider::TtrWalk& exact_walk() {
      if (!exact) exact.emplace(provider.ttr_walk());
      return *exact;
    }
  };
  // One planned claim of the window whose refusal does not stand, as the pass's walk decides it:
  // a candidate (candidates_), a wake-up, a claim whose least laxity is > 0 (skipped_), or set
  // aside with every object resident (rest(), then consider_resting()). controller_eval.cc.
  void walk_claim(Rec& r, WalkPass& pass);
  // True while `r` waits for the reads ahead of it (Rec::wait_until, wait_for_reads_ahead): it
  // is not looked at before then, and the controller wakes then.
  bool waiting(const Rec& r, TimePoint now);
  std::vector<ClaimId> scratch_ids_;                        // scratch of the attempt-order walk
  // update(): the records of the claims its last call updated (update_ids_), kept while no
  // record has been erased since (claims_erased_ then was update_erased_): claims_ is node-based,
  // so a queue that lists the same claims again needs no lookup of each.
  std::vector<Rec*> scratch_recs_;
  std::vector<ClaimId> update_ids_;
  uint64_t claims_erased_ = 0, update_erased_ = UINT64_MAX;
  std::map<uint32_t, std::function<void()>> revisers_;      // set_reviser()
  std::set<uint32_t> revising_;  // runtimes with a revision posted and not yet run
  std::map<uint32_t, TimePoint> revised_at_;  // when each runtime's last revision ran
  struct Skipped {  // evaluate_timed_indexed: a claim whose least laxity is > 0
    Duration least;
    ClaimId id;
    bool ranged;  // least is from its TtrBoundWalk::range, not from its whole footprint
    bool operator<(const Skipped& o) const { return std::tie(least, id) < std::tie(o.least, o.id); }
  };
  std::vector<Skipped> skipped_;
  struct ChainMember {  // chain_deadlines()'s scratch
    TimePoint use;
    ClaimId id;
    Rec* rec;
    bool operator<(const ChainMember& o) const { return std::tie(use, id) < std::tie(o.use, o.id); }
  };
  std::vector<ChainMember> chain_;
  // chain_deadlines()'s scratch: the soonest (use, id) of an index.
  std::vector<std::pair<TimePoint, ClaimId>> soonest_;
  std::vector<ClaimId> chained_;  // the claims given a lead by the last chain_deadlines()
  ErrorFeedback feedback_;
  ByteTimeMeter meter_;
  ControllerStats stats_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

// A controller for a commit configuration by name: a policy of make_commit_policy() (demand,
// immediate, queue-K, and TempoKV's rule with either TTR), or one of tempokv_configurations():
// TempoKV's policy with options.error_feedback, wait_for_reads_ahead and chain_deadlines cleared
// where its switches turn them off (never set: a caller's off stays off) and
// options.progressive_release set from them. InvalidArgument for an unknown name.
Result<std::unique_ptr<Controller>> make_controller(Executor& executor, StagingProvider& provider,
                                                    std::string_view configuration,
                                                    ControllerOptions options = {});

// A configuration of tempokv_configurations() other than "tempokv" itself.
bool is_tempokv_variant(std::string_view configuration);

// Whether make_controller() builds `configuration`. What the eval's --policies and tempokvd's
// controller.policy are checked against; controller_configuration_names() lists them for errors.
bool is_controller_configuration(std::string_view configuration);
std::string controller_configuration_names();

// Whether the runtimes of a commit configuration project the queue wait with the expected order
// statistics of the decoders' completions (AdapterOptions::wait_order_statistics): TempoKV's
// configurations do unless their switches turn it off ("tempokv-no-order-stats" keeps the
// conditional means of the paper's §3.1); the policies that time nothing (demand, immediate,
// queue-K) have no use for either.
bool projects_order_statistics(std::string_view configuration);

// The issue order the provider of a commit configuration runs (ProviderOptions::issue_order):
// TempoKV's configurations by use unless their switches say otherwise ("tempokv-commit-order");
// the baselines (demand, immediate, queue-K) by commit, their better order on the tuning set
// (docs/evaluation.md, "Issue order") and the order of the systems they stand for.
IssueOrder issue_order_of(std::string_view configuration);

}  // namespace tempokv
