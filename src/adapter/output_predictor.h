// OutputPredictor: how many more tokens a request will generate, from what a runtime sees
// (DESIGN.md §4): for a request with n tokens generated, the mean of (N − n) over recently
// completed outputs of length N > n, bounded by the request's generation limit; before any
// completion longer than n, a configured prior. It never sees true output lengths of running
// requests. Not thread-safe: used on the control-plane thread.
//
// Cost: the TTU projection asks once per running and waiting request per order update, a
// completion comes far less often; so a completion keeps the window sorted with suffix sums
// (O(window)) and a question is a binary search (O(log window)), the same integers as a scan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace tempokv {

class OutputPredictor {
 public:
  // window: how many recent completions to remember; prior_tokens: expected output length
  // before any completion.
  OutputPredictor(uint32_t window, uint32_t prior_tokens);

  void record_completion(uint32_t output_tokens);
  // Predicted tokens still to generate (≥ 1 while n < limit; 0 when n ≥ limit).
  uint32_t remaining(uint32_t generated, uint32_t limit) const;
  // Predicted total output length of a request not yet started.
  uint32_t total(uint32_t limit) const { return remaining(0, limit); }
  // The q-quantile (0 < q <= 1) of (N − n) over recent completions with N > n instead of their
  // mean, bounded as remaining(); the prior before any such completion. With long-tailed outputs
  // the mean sits far above most outcomes (the tail pulls it), the median does not.
  uint32_t remaining_quantile(uint32_t generated, uint32_t limit, double q) const;
  // The conditional distribution remaining() takes the mean of, as at most `max_atoms` weighted
  // atoms appended to `out`: the lengths (min(N, limit) − n) of the recent completions with
  // N > n, in ascending order, cut into max_atoms runs of equal count (±1), each run one atom at
  // its mean with weight run size / count, so the atoms' mean is the distribution's (exact with
  // count ≤ max_atoms); before any such completion, one atom at remaining(). Nothing when
  // n ≥ limit.
  struct Atom {
    double tokens;
    double weight;  // the atoms of one call sum to 1
  };
  void conditional_atoms(uint32_t generated, uint32_t limit, uint32_t max_atoms,
                         std::vector<Atom>& out) const;
  size_t completions() const { return recent_.size(); }

 private:
  uint32_t window_;
  uint32_t prior_tokens_;
  std::deque<uint32_t> recent_;   // in completion order: the oldest leaves first
  std::vector<uint32_t> sorted_;  // the same lengths, ascending
  std::vector<uint64_t> suffix_;  // suffix_[i] = Σ sorted_[i..]; suffix_[sorted_.size()] = 0
};

}  // namespace tempokv
