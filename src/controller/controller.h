// Controller: owns the claims and decides when to try committing them (DESIGN.md §3). It never
// changes the runtime's order; it combines the runtime's TTU (aged by elapsed time) with the
// provider's latest TTR through a CommitPolicy, and asks the StagingProvider to commit. The
// provider decides whether a commit succeeds.
//
// Rules kept here:
//  * Attempts go first to claims whose retrieval is requested (in request order), then to
//    eligible planned claims in the runtime's latest order, then to claims not in that order (in
//    report order). A refused or ineligible claim never blocks the others.
//  * Retrieval requested + commit refused -> ORDINARY (the provider's demand path). Commit and
//    ORDINARY are mutually exclusive; a committed claim is never revoked by new estimates.
//  * Reevaluation on every estimate/order update, staging completion and capacity release, and on
//    a periodic tick while planned claims exist (so a simulation with nothing pending ends). Timed
//    policies also wake exactly when a planned claim's projected laxity reaches zero, so commits
//    are not late by up to a tick (the paper relies on the tick alone).
//  * Every state change goes through transition(), which aborts on an illegal one.
//
// Accounting: the integral of protected + reserved fast-tier bytes over time (C of DESIGN.md §5),
// per-claim timelines, refused commits.
//
// Threading: Executor thread only. Callbacks run there; they may call back in.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "controller/byte_time_meter.h"
#include "controller/claim_state.h"
#include "controller/commit_policy.h"
#include "provider/staging_provider.h"
#include "tempokv/executor.h"

namespace tempokv {

struct ControllerOptions {
  Duration tick = std::chrono::milliseconds(50);  // periodic reevaluation while claims are planned
  Status validate() const;
};

// When each step of a claim happened (unset when it did not).
struct ClaimTimeline {
  std::optional<TimePoint> reported, committed, ready, retrieval_requested, transfer_start,
      transfer_end, released;
};

enum class RetrievalAnswer {
  kReady,          // stage-ready now: begin the transfer
  kOrdinaryReady,  // ordinary path, every object already resident and held: begin the transfer
  kWait,           // the callback reports when the transfer may begin (or the error)
};
enum class RetrievalPath { kStaged, kOrdinary };
using RetrievalCallback = std::function<void(ClaimId, Result<RetrievalPath>)>;

struct ClaimInfo {
  ClaimId id = 0;
  ClaimState state = ClaimState::kPlanned;
  uint64_t footprint_bytes = 0;  // fast-tier charge of its objects
  bool ordinary = false;         // took the ordinary path
  bool refused = false;          // at least one commit attempt was refused
  Status failure;                // why it was released early (read error, missing object)
  ClaimTimeline timeline;
};

struct ControllerStats {
  uint64_t reported = 0;
  uint64_t commits = 0;
  uint64_t refused_attempts = 0;  // commit attempts refused for budget or capacity
  uint64_t refused_claims = 0;    // claims refused at least once
  uint64_t ordinary = 0;
  uint64_t released = 0;
  uint64_t cancelled = 0;
  uint64_t failed = 0;
  uint64_t evaluations = 0;  // reevaluation passes
  uint64_t ttr_queries = 0;
  uint64_t ticks = 0;
  double protected_gib_s = 0;  // ∫ (protected + reserved) dt so far
};

class Controller {
 public:
  Controller(Executor& executor, StagingProvider& provider, std::unique_ptr<CommitPolicy> policy,
             ControllerOptions options = {});
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // A reusable-KV hit of a waiting request: a metadata-only claim. InvalidArgument for an empty
  // manifest or one larger than the protected budget; FailedPrecondition for a known id.
  Status report(ClaimId id, std::vector<ManifestEntry> manifest, Duration ttu);
  // New TTU estimates (each timestamped now) and the runtime's waiting order, then one
  // reevaluation. Unknown ids are errors; claims past PLANNED ignore new estimates.
  Status update(std::span<const std::pair<ClaimId, Duration>> ttus,
                std::span<const ClaimId> waiting_order);
  Result<RetrievalAnswer> request_retrieval(ClaimId id, RetrievalCallback on_ready);
  Status begin_transfer(ClaimId id);
  // The copy is done: the claim is released and its protection ends.
  Status end_transfer(ClaimId id);
  Status cancel(ClaimId id);

  Result<ClaimInfo> info(ClaimId id) const;
  std::vector<ClaimInfo> claims() const;
  ControllerStats stats() const;
  std::string_view policy_name() const { return policy_->name(); }
  // Forgets released claims (long-running services); their timelines are gone afterwards.
  void forget_released();

 private:
  struct Rec {
    StagingClaim claim;
    ClaimInfo info;
    Duration ttu{0};
    TimePoint ttu_at{};
    uint32_t rank = UINT32_MAX;
    bool requested = false;
    RetrievalCallback on_ready;
  };

  Rec* find(ClaimId id);
  void transition(Rec& r, ClaimState to);
  void reevaluate();
  void evaluate_once();
  // Tries to commit; true when committed (STAGING or STAGE_READY).
  bool try_commit(Rec& r);
  void start_ordinary(Rec& r);
  void on_provider_ready(ClaimId id, Status status);
  void finish(Rec& r, const Status& failure);
  void account();
  void schedule_tick();
  void schedule_wake();

  Executor& executor_;
  StagingProvider& provider_;
  std::unique_ptr<CommitPolicy> policy_;
  ControllerOptions options_;
  std::unordered_map<ClaimId, Rec> claims_;
  std::vector<ClaimId> order_;        // runtime's latest waiting order
  std::deque<ClaimId> requested_;     // planned claims with retrieval requested, request order
  std::vector<ClaimId> report_order_;  // planned claims in report order (pruned lazily)
  uint64_t planned_ = 0;
  bool evaluating_ = false;
  bool again_ = false;
  TimerHandle tick_;
  bool tick_armed_ = false;
  std::optional<TimePoint> next_wake_;  // earliest projected zero laxity of a planned claim
  TimerHandle wake_;
  bool refused_planned_ = false;  // a planned claim was refused and may fit later
  ByteTimeMeter meter_;
  ControllerStats stats_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace tempokv
