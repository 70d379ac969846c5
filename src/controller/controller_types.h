// The controller's value types: its options, a claim's timeline and info as it reports them, and
// its counters (controller.h has the Controller itself).
#pragma once

#include <cstdint>
#include <optional>

#include "controller/claim_state.h"
#include "controller/error_feedback.h"
#include "tempokv/executor.h"
#include "tempokv/retrieval.h"  // ClaimId
#include "tempokv/status.h"

namespace tempokv {

struct ControllerOptions {
  Duration tick = std::chrono::milliseconds(50);  // periodic reevaluation while claims are planned
  // Evaluate every planned claim exactly instead of the claims the policy's bounds select: the
  // brute-force reference for tests; O(planned claims) TTR projections per evaluation.
  bool full_scan = false;
  // Release each object's protection as soon as its own copy to the device is done, not at the
  // end of the whole transfer (the tempokv-progressive variant; needs object_transferred calls).
  bool progressive_release = false;
  // Fold the recent timing error of timed commits into the laxity of policies that use it
  // (TempoKV; error_feedback.h). Off: the plain rule ("tempokv-static").
  bool error_feedback = true;
  // ttu_horizon(): the adapter projects exactly only as far as the commit window can reach and
  // reports a lower bound beyond (cheaper per step with long queues). It had raised fig4's C at
  // 50 % (Qwen 0.17 -> 0.41 x Immediate's): bounds aged into the commit window between order
  // updates seconds apart and claims committed on them. Bounds are now revised before any
  // commit (update()'s lower_bound, set_reviser) and fig4 over ten seeds is the same with it on.
  // On by default: the whole suite passes with it.
  bool ttu_horizon = true;
  // A claim TempoKV's rule (CommitPolicy::state_aware) finds eligible waits while the reads
  // ahead of it drain, when its own reads started after them would end when they would end if committed now
  // (StagingProvider::commit_wait: no read ahead outlasts it). It is then ready no later and holds
  // nothing meanwhile. Claims used at one instant (vLLM starts every waiting load at the first
  // free slot) commit one after another rather than together. Off: every eligible claim commits
  // at once ("tempokv-no-wait").
  bool wait_for_reads_ahead = true;
  // Under TempoKV's rule a claim must be ready early enough for the planned claims used after it
  // to be read after it (controller_chain.cc): reads go in use order, so claims used at one
  // instant are read one after another, and each must be ready by the time the next must start.
  // Its laxity then counts from that deadline instead of its use. Off: each claim is timed as if
  // nothing else were planned ("tempokv-no-chain").
  bool chain_deadlines = true;
  // How many of the planned claims used soonest the chain spans (Controller::chain_deadlines):
  // one batch of the paper's testbed and of the vLLM protocol (4 sequences). vLLM starts the
  // loads of every waiting request at the first free slot, though only a batch of them can run
  // then: a longer chain made the first claims ready several reads before they were needed
  // (on vLLM: C 0.55 × Immediate's at 100 % with 8, no TTFT gained).
  uint32_t chain_length = 4;
  // A claim whose TTU is only a lower bound (beyond its runtime's TTU horizon) is no member of the
  // chain: by the bound it would pull the deadlines before it earlier than its true use does.
  // Needed with a short horizon (AdapterOptions::rhythm_horizon, the default); off, a bound
  // counts as a use (5 s away or more under the adapter's long horizon, where it rarely counts).
  bool chain_skips_bounds = true;
  // Timed policies stage a claim on objects only a remote tier holds in two stages
  // (StagingProvider::prefetch): when the laxity of the whole path (remote fetch, the store's
  // write, the read) reaches zero its fetches start and nothing is committed; the commit, which
  // takes fast-tier room, comes when the laxity of the local part (write and read) does, and not
  // before its fetches have landed (its reads cannot start earlier). Off: the commit comes at the
  // whole path's laxity and holds its room through the fetch.
  bool remote_prefetch = true;
  ErrorFeedbackOptions feedback;
  Status validate() const;
};

// When each step of a claim happened (unset when it did not).
struct ClaimTimeline {
  std::optional<TimePoint> reported, committed, ready, retrieval_requested, transfer_start,
      transfer_end, released;
};

struct ClaimInfo {
  ClaimId id = 0;
  ClaimState state = ClaimState::kPlanned;
  uint64_t footprint_bytes = 0;  // fast-tier charge of its objects
  bool ordinary = false;         // took the ordinary path
  bool refused = false;          // at least one commit attempt was refused
  bool ordinary_only = false;    // larger than the protected budget: never committed
  bool cancelled = false;        // cancelled while being copied: released at end_transfer
  Status failure;                // why it was released early (read error, missing object)
  ClaimTimeline timeline;
  // What the controller expected when it committed: the projected use time (TTU at commit
  // + commit time) and the provider's TTR then. Their errors are measured against
  // timeline.retrieval_requested and timeline.ready.
  std::optional<TimePoint> projected_use_at_commit;
  std::optional<Duration> ttr_at_commit;
  // The use time projected by the last TTU update made before the instant its retrieval was
  // requested (unset without one). An update at that very instant already knows the use (the
  // runtime admits at the boundary it projects from), so this is what any commit could have
  // acted on: how much sooner than projected the use came.
  std::optional<TimePoint> projected_use_before_request;
};

struct ControllerStats {
  uint64_t reported = 0;
  uint64_t commits = 0;
  uint64_t prefetches = 0;  // first stages: claims whose remote fetches started, not committed
  uint64_t fetch_waits = 0;  // claims eligible while a fetch of theirs was in flight, held back
  // Commit attempts refused for budget or capacity (those a standing refusal or the provider's
  // refusal check alone decided without a commit included).
  uint64_t refused_attempts = 0;
  uint64_t refused_claims = 0;    // claims refused at least once
  uint64_t ordinary = 0;
  uint64_t released = 0;
  uint64_t cancelled = 0;
  uint64_t failed = 0;
  uint64_t evaluations = 0;  // reevaluation passes
  uint64_t ttr_queries = 0;
  uint64_t rested = 0;    // planned claims set aside with every object resident (TTR 0)
  uint64_t unrested = 0;  // of those, put back in the walk by an eviction of one of their objects
  uint64_t ticks = 0;
  uint64_t commit_waits = 0;  // eligible claims left to wait for the reads ahead of them
  uint64_t held = 0;  // waiting claims taken out of the window walk until their wait ends (hold())
  uint64_t chain_visits = 0;   // index entries the chain of deadlines' gather stepped through
  double protected_gib_s = 0;  // ∫ (protected + reserved) dt so far
};

}  // namespace tempokv
