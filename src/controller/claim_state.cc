#include "controller/claim_state.h"

namespace tempokv {

std::string_view claim_state_name(ClaimState state) {
  switch (state) {
    case ClaimState::kPlanned: return "PLANNED";
    case ClaimState::kStaging: return "STAGING";
    case ClaimState::kStageReady: return "STAGE_READY";
    case ClaimState::kTransferring: return "TRANSFERRING";
    case ClaimState::kOrdinary: return "ORDINARY";
    case ClaimState::kReleased: return "RELEASED";
  }
  return "?";
}

bool transition_allowed(ClaimState from, ClaimState to) {
  using S = ClaimState;
  switch (from) {
    case S::kPlanned:
      return to == S::kStaging || to == S::kStageReady || to == S::kOrdinary || to == S::kReleased;
    case S::kStaging: return to == S::kStageReady || to == S::kReleased;
    case S::kStageReady: return to == S::kTransferring || to == S::kReleased;
    case S::kTransferring: return to == S::kReleased;
    case S::kOrdinary: return to == S::kReleased;
    case S::kReleased: return false;
  }
  return false;
}

}  // namespace tempokv
