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
