// The metadata-only projection behind ttr() (DESIGN.md §4): when would the reads a claim needs
// finish, given the reads in flight, the queue in issue order, the concurrency limit and the
// calibrated aggregate rate?
//
// Model: at most `slots` reads are in service; the ones in service share `bytes_per_s` equally
// (processor sharing), so each moves at bytes_per_s / n. A read leaves service when its bytes are
// done and the next read in issue order takes its slot. The result is the finish time of the last
// needed read, not a sum. The simulated SSD engine with zero latency follows the same model, so in
// simulation the projection is exact when the rate is.
//
// Cost: O((in flight + reads up to the last needed one) * log slots); no allocation besides the
// heap of reads in service. Plain functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <vector>

namespace tempokv {

struct PlannedRead {
  double bytes = 0;     // bytes still to move
  bool needed = false;  // the claim waits for it
};

// Seconds from now until every needed read has finished. `in_flight` are in service now (their
// remaining bytes); `next()` yields the waiting reads in issue order (std::nullopt at the end).
// `needed` is how many needed reads there are in total. 0 when needed is 0.
template <typename NextFn>
double project_last_finish_s(const std::vector<PlannedRead>& in_flight, NextFn&& next,
                             uint32_t slots, double bytes_per_s, uint64_t needed) {
  if (needed == 0) return 0.0;
  // Every read in service progresses equally, so track the progress each has received (`served`)
  // and order reads by the progress at which they finish.
  struct Active {
    double finish;  // value of `served` at which it is done
    bool needed;
    bool operator>(const Active& o) const { return finish > o.finish; }
  };
  std::priority_queue<Active, std::vector<Active>, std::greater<>> active;
  double served = 0;
  double t = 0;
  double last = 0;
  for (const PlannedRead& r : in_flight) active.push({r.bytes, r.needed});
  bool more = true;
  auto refill = [&] {
    while (more && active.size() < slots) {
      std::optional<PlannedRead> r = next();
      if (!r) {
        more = false;
        break;
      }
      active.push({served + r->bytes, r->needed});
    }
  };
  refill();
  while (needed > 0 && !active.empty()) {
    Active top = active.top();
    active.pop();
    double n = static_cast<double>(active.size() + 1);
    if (top.finish > served) {
      t += (top.finish - served) * n / bytes_per_s;
      served = top.finish;
    }
    if (top.needed) {
      --needed;
      last = t;
    }
    refill();
  }
  return last;
}

}  // namespace tempokv
