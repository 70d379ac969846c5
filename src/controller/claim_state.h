// The states of a staging claim and the only transitions allowed between them (DESIGN.md §3).
// An illegal transition is a bug: the controller checks every one and fails loudly.
#pragma once

#include <cstdint>
#include <string_view>

namespace tempokv {

enum class ClaimState : uint8_t {
  kPlanned,       // hit recorded; nothing reserved, no I/O
  kStaging,       // committed: capacity reserved, reads queued or in flight
  kStageReady,    // every object resident and protected
  kTransferring,  // fast tier -> device copy in progress
  kOrdinary,      // demand path: resident objects used, the rest read on demand, nothing protected
  kReleased,      // this claim's protection is gone (done, cancelled or failed)
};

std::string_view claim_state_name(ClaimState state);
// PLANNED -> STAGING | STAGE_READY | ORDINARY | RELEASED; STAGING -> STAGE_READY | RELEASED;
// STAGE_READY -> TRANSFERRING | RELEASED; TRANSFERRING -> RELEASED; ORDINARY -> RELEASED.
bool transition_allowed(ClaimState from, ClaimState to);

}  // namespace tempokv
