#include "eval/fleet_workload.h"

#include <algorithm>

#include "common/splitmix.h"

namespace tempokv {

std::vector<TraceRecord> synthetic_conversations(const SyntheticConversations& s) {
  uint64_t state = s.seed * 0x9e3779b97f4a7c15ULL + 7;
  auto uniform = [&](uint32_t lo, uint32_t hi) {
    return lo + static_cast<uint32_t>(splitmix64(state) % (uint64_t(hi - lo) + 1));
  };
  std::vector<TraceRecord> out;
  uint64_t next_block = 1;  // 0: the shared system prompt
  for (uint32_t c = 0; c < s.conversations; ++c) {
    std::vector<uint64_t> history = {0};
    uint32_t tokens = s.block_tokens;
    double at_s = c * s.start_gap_s;
    for (uint32_t t = 0; t < s.turns; ++t) {
      // Think times vary (0.5-1.5 x the gap), so turns do not keep one order round after round
      // (a round-robin router would then send every turn of a conversation to one engine).
      if (t > 0) at_s += s.turn_gap_s * (0.5 + uniform01(state));
      tokens += uniform(s.min_new_tokens, s.max_new_tokens);
      // Whole blocks up to the prompt's end; the last, partial one is new in every turn.
      while (uint64_t(history.size()) * s.block_tokens < tokens) history.push_back(next_block++);
      TraceRecord r;
      r.timestamp_ms = 1000.0 * at_s;
      r.input_length = tokens;
      r.output_length = uniform(s.min_output, s.max_output);
      r.hash_ids = history;
      out.push_back(r);
      // The next turn's history: this prompt's whole blocks (the partial one is rewritten).
      if (uint64_t(history.size()) * s.block_tokens > tokens) history.pop_back();
      tokens = static_cast<uint32_t>(history.size()) * s.block_tokens;
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const TraceRecord& a, const TraceRecord& b) {
    return a.timestamp_ms < b.timestamp_ms;
  });
  return out;
}

std::vector<TraceRecord> trace_window(const std::vector<TraceRecord>& all, double window_start_s,
                                      double window_s, uint32_t max_records) {
  std::vector<TraceRecord> out;
  const double w0 = window_start_s * 1000, w1 = (window_start_s + window_s) * 1000;
  for (const TraceRecord& t : all) {
    if (t.timestamp_ms < w0 || t.timestamp_ms >= w1) continue;
    if (max_records && out.size() >= max_records) break;
    out.push_back(t);
  }
  return out;
}

}  // namespace tempokv
