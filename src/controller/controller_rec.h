// ControllerClaim: the controller's record of one claim (Controller::Rec): the claim, what it
// reports of it, its estimates and where it sits in the controller's indexes. Owned by the
// Controller and changed only by it (controller.h has the rules; the indexes named here are its
// members).
#pragma once

#include <cstdint>
#include <optional>

#include "controller/controller_types.h"
#include "provider/staging_provider.h"
#include "tempokv/executor.h"
#include "tempokv/retrieval.h"

namespace tempokv {

// The rank of a claim in no runtime's waiting order.
inline constexpr uint32_t kUnrankedClaim = UINT32_MAX;

// Aligned to a cache line. The first holds every field a TTU update reads or writes but the
// claim's use_at and the state, which the second holds (the claim's 48 bytes, then info's id and
// state): an update of a thousand claims per step misses the cache about twice per claim, not
// five or six times (the fields were spread over its ~400 bytes).
struct alignas(64) ControllerClaim {
  TimePoint use_at{};        // ttu_at + ttu
  TimePoint ttu_at{};
  Duration ttu{0};
  // Its key in by_use_ while planned (indexed): at most use_at, lagging it by a little (set_ttu).
  TimePoint index_at{};
  TimePoint park_use_at{};  // its key in parked_by_use_ while parked: at most use_at (set_ttu)
  // use_at as the last update at an earlier instant than ttu_at left it (keep_prior_use()).
  std::optional<TimePoint> prior_use_at;
  bool indexed = false;
  // Out of by_use_ while its refusal stands (park()): in parked_budget_ under park_budget_at
  // and in parked_capacity_ under park_capacity_at, the bounds of its share of each room.
  bool parked = false;
  bool requested = false;
  bool estimated = false;  // a TTU update (not only the report's) has reached it
  bool ttu_bound = false;       // its TTU is a lower bound (update()'s lower_bound)
  StagingClaim claim;
  ClaimInfo info;
  int64_t park_budget_at = 0, park_capacity_at = 0;
  // Indexed in resting_ rather than by_use_ (same key): every object was resident when it was
  // set aside (rest()), and none has been evicted since. rest_gen tells its current stay from
  // an earlier one in resting_by_key_.
  bool resting = false;
  uint64_t rest_gen = 0;
  // Indexed in waiting_ rather than by_use_ (same key) while it waits for the reads ahead of it
  // (hold()), and in wait_ends_ under wait_until; never a claim refused before (below).
  bool held = false;
  uint64_t seq = 0;          // report order
  uint32_t runtime = 0;      // the runtime whose order last listed it
  uint32_t rank = kUnrankedClaim;  // position in that order
  uint64_t cleared_gen = 0;  // set_order(): its rank was cleared in this generation
  uint64_t attempted_in = 0;  // the evaluation that last attempted to commit it
  bool feedback_noted = false;  // its timing error went to feedback_
  // note_missed(): how much sooner than projected its use came; recorded once it is ready.
  std::optional<Duration> missed_by;
  // wait_for_reads_ahead: when it first waited (eligible, its reads not due to start yet), with
  // its TTR and projected use then. Its timing error is judged from there, as if committed then
  // (the wait leaves its ready time as it was, and eager TempoKV would have committed it then),
  // so waiting does not move the feedback margin.
  struct WaitStart {
    TimePoint at;
    Duration ttr;
    TimePoint use_at;
  };
  std::optional<WaitStart> waited;
  // remote_prefetch: it was eligible while a fetch of its objects was still in flight, and waited
  // for that fetch to land before its commit (the read cannot start earlier).
  bool awaited_fetch = false;
  // remote_prefetch: a fetch its first stage started failed (StagingProvider's fetch listener):
  // its next commit attempt fails it with this instead (a miss is fetched once per claim).
  std::optional<Status> prefetch_failure;
  // The end of its current wait: until then it is not looked at again (its reads ahead drain at
  // the projected rate; a commit used sooner only lengthens the wait, found at its end).
  TimePoint wait_until{};
  // chain_deadlines: how long before its use it must be ready so that the planned claims used
  // after it can be read after it (set by chain_deadlines() for the pass; 0 outside a chain).
  Duration lead{0};
  // Once refused: a lower bound of its own share of a commit's cost (note_cost(), on_entry()),
  // and StagingProvider::store_index_changes() when it was measured: while unchanged, its
  // objects are all still in the store as the refused commit found them (refused_again()).
  // cost_gen: its entries in costed_by_key_ (0: none yet).
  StagingProvider::OwnCost cost;
  uint64_t cost_store_changes = 0;
  uint64_t cost_gen = 0;
  RetrievalCallback on_ready;
};

}  // namespace tempokv
