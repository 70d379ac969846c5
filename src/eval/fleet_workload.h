// The conversation workload of the fleet scenario (docs/fleet.md): the Mooncake conversation
// trace (a window of it) when the file is there, otherwise a small synthetic conversation
// workload in the trace's own form, so the scenario runs anywhere. Either way the records are
// replayed by make_trace_requests (every prefill writes the KV it produced; equal hash ids are
// the same chunks), in arrival order, for a round-robin router to spread over the engines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workload/mooncake_trace.h"

namespace tempokv {

struct SyntheticConversations {
  uint32_t conversations = 12;
  uint32_t turns = 4;
  uint32_t block_tokens = 512;
  uint32_t min_new_tokens = 512, max_new_tokens = 1536;  // user text + last answer, per turn
  uint32_t min_output = 32, max_output = 128;
  double start_gap_s = 0.4;  // between conversations' first turns
  double turn_gap_s = 1.5;   // mean time between a conversation's turns (uniform 0.5-1.5 x)
  uint64_t seed = 1;
};

// Conversation c's turn t repeats every block of its turns before it (its history) after one
// system-prompt block all conversations share, and adds its new tokens; sorted by arrival.
std::vector<TraceRecord> synthetic_conversations(const SyntheticConversations& s);

// Records [window_start_s, window_start_s + window_s) of the trace, at most `max_records`
// (0: all), in arrival order.
std::vector<TraceRecord> trace_window(const std::vector<TraceRecord>& all, double window_start_s,
                                      double window_s, uint32_t max_records);

}  // namespace tempokv
