// RequestRecord: what the emulated engine measured for one request, for the evaluation's
// per-request rows (DESIGN.md §5): its sizes, the path its prefix KV took, and the time of every
// step from arrival to the last token (claim steps from the controller's timeline). Values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tempokv/executor.h"

namespace tempokv {

enum class RequestPath : uint8_t {
  kNoHit,      // nothing of its prefix was in the store: full prefill
  kStaged,     // retrieved from a committed (stage-ready) claim
  kOrdinary,   // retrieved on the ordinary (demand) path
  kRecompute,  // had a hit, but retrieval failed: the whole prompt was prefilled
};
std::string_view request_path_name(RequestPath path);

struct RequestRecord {
  uint64_t id = 0;
  uint32_t engine = 0;
  uint32_t prompt_tokens = 0;
  uint32_t hit_chunks = 0;      // chunks found by the prefix lookup at arrival
  uint32_t cached_tokens = 0;   // tokens those chunks cover
  uint64_t cached_bytes = 0;    // their KV bytes
  uint32_t prefill_tokens = 0;  // tokens its prefill computed
  uint32_t output_tokens = 0;   // tokens generated
  uint32_t max_output_tokens = 0;
  RequestPath path = RequestPath::kNoHit;
  std::string failure;  // why it fell back to recompute

  TimePoint arrival{};
  std::optional<TimePoint> claim_reported, committed, ready;  // controller timeline
  std::optional<TimePoint> retrieval_requested;               // controller timeline
  // What the controller expected at commit: the use time it projected and the TTR then.
  std::optional<TimePoint> projected_use_at_commit;
  std::optional<Duration> ttr_at_commit;
  // The use time projected before the instant of the retrieval request
  // (ClaimInfo::projected_use_before_request).
  std::optional<TimePoint> projected_use_before_request;
  std::optional<TimePoint> admitted, retrieval_start, retrieval_end, first_token, finished;
  // TTU projected by the adapter at the first order update that saw the request waiting.
  std::optional<Duration> first_ttu;
  std::optional<TimePoint> first_ttu_at;

  uint64_t verified_chunks = 0;    // real mode: restored chunks checked against the store
  uint64_t mismatched_chunks = 0;  // of those, with wrong bytes (must stay 0)

  // first_token − arrival; nullopt until the first token.
  std::optional<Duration> ttft() const {
    if (!first_token) return std::nullopt;
    return *first_token - arrival;
  }
};

}  // namespace tempokv
