// Staging claims as the provider sees them (DESIGN.md §3): an id and an ordered manifest of the
// KV objects a request will retrieve. Values; thread-safe as values.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "tempokv/executor.h"
#include "tempokv/key.h"
#include "tempokv/retrieval.h"  // ClaimId, ManifestEntry
#include "tempokv/status.h"

namespace tempokv {

// A claim's own share of a commit's cost: the bytes it would add to protected + reserved
// (budget_bytes), and to protected + reserved + pinned + the room owed to demand reads
// (occupied_bytes: the room its own queued demand reads are owed moves to it, so it counts less by
// that). The claim is refused exactly when budget_bytes > StagingProvider::budget_room() or
// occupied_bytes > StagingProvider::capacity_room(). The share only falls when one of its objects
// enters the budget or the occupied room or a demand read of one of them is queued
// (StagingProvider::set_entry_listener), by at most what that reports, while the rooms move by
// every change of the sums; so a share measured once, less what the listener reported since for the
// claim's own objects, is a lower bound of its share later, and a claim refused by that bound now
// would be refused by commit().
struct ClaimOwnCost {
  uint64_t budget_bytes = 0;
  int64_t occupied_bytes = 0;
};

struct StagingClaim {
  ClaimId id = 0;
  std::vector<ManifestEntry> objects;  // in retrieval order; reads are issued in this order
  // When its retrieval is projected to begin (the controller's use time). The provider issues
  // queued reads earliest use first, so a claim used later never delays one used sooner; unset
  // means now (needed at once).
  std::optional<TimePoint> use_at;
};

// What commit() achieved at once.
enum class CommitState {
  kStageReady,  // every object was resident: protected now, no reads
  kStaging,     // reads queued; the ready callback reports the outcome
};

// The provider's view of a claim it knows.
enum class ClaimPhase {
  kStaging,          // committed, reads outstanding
  kStageReady,       // committed, every object resident and protected
  kOrdinaryReading,  // ordinary (demand) path, reads outstanding
  kOrdinaryReady,    // ordinary path, every object resident and held
  kDraining,         // released, cancelled or failed; waiting for in-flight reads or copies
};
std::string_view claim_phase_name(ClaimPhase phase);

// Reports the outcome of staging (or of an ordinary read): OK when every object is resident and
// protected (held), else the error that failed it. Runs on the Executor thread; it may call back
// into the provider.
using ReadyCallback = std::function<void(ClaimId, Status)>;

}  // namespace tempokv
