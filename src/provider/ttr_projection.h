// The metadata-only projection behind ttr() (DESIGN.md §4): when would the reads a claim needs
// finish, given the reads in flight, the queue in issue order, the concurrency limit and the
// calibrated aggregate rate?
//
// Model: at most `slots` reads are in service; the ones in service share `bytes_per_s` equally
// (processor sharing), so each moves at bytes_per_s / n. A read leaves service when its bytes are
// done and the next read in issue order takes its slot. The result is the finish time of the last
// needed read, not a sum. The simulated SSD engine with zero latency follows the same model, so in
// simulation the projection is exact when the rate is. A `background` of writes expected to share
// the device throughout counts as that many more requests in service (StagingProvider's
// background_writes()).
//
// Cost: O((in flight + reads up to the last needed one) * log slots); no allocation besides the
// heap of reads in service (none with continue_projection_s's reused vector). Plain functions;
// thread-safe. StagingProvider::ttr() and its TtrWalk continue a projection they keep.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <algorithm>
#include <vector>

namespace tempokv {

struct PlannedRead {
  double bytes = 0;     // bytes still to move (continue_projection_s: the finish progress)
  bool needed = false;  // the claim waits for it
};

// Where a projection stands: `t` seconds after its start, when every read in service has received
// `served` bytes of progress.
struct ProjectionPoint {
  double served = 0;
  double t = 0;
};

// The projection continued from `at`: `in_service` holds the reads in service there, each with
// the value of `served` at which it is done in `bytes`, and is used as the heap (reordered and
// drained, so a caller may reuse one vector without allocating); `next()` yields the waiting reads
// in issue order (std::nullopt at the end). Returns the later of `last` and the finish time, in
// seconds after the projection's start, of the `needed` needed reads still to finish.
// One processor-sharing step: n requests share bytes_per_s (the reads in service and the
// background's writes), and the next read to finish does so once `served` (the progress every
// request in service has made) reaches finish.
inline void advance_shared(double& t, double& served, double finish, double n,
                           double bytes_per_s) {
  if (finish <= served) return;
  t += (finish - served) * n / bytes_per_s;
  served = finish;
}

template <typename NextFn>
double continue_projection_s(std::vector<PlannedRead>& in_service, ProjectionPoint at, double last,
                             NextFn&& next, uint32_t slots, double bytes_per_s, uint64_t needed,
                             double background = 0) {
  // Every read in service progresses equally, so track the progress each has received (`served`)
  // and order reads by the progress at which they finish (a min-heap).
  auto later = [](const PlannedRead& a, const PlannedRead& b) { return a.bytes > b.bytes; };
  std::vector<PlannedRead>& heap = in_service;
  std::make_heap(heap.begin(), heap.end(), later);
  double served = at.served;
  double t = at.t;
  bool more = true;
  auto refill = [&] {
    while (more && heap.size() < slots) {
      std::optional<PlannedRead> r = next();
      if (!r) {
        more = false;
        break;
      }
      heap.push_back({served + r->bytes, r->needed});
      std::push_heap(heap.begin(), heap.end(), later);
    }
  };
  refill();
  while (needed > 0 && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const PlannedRead top = heap.back();
    heap.pop_back();
    const double n = static_cast<double>(heap.size() + 1) + background;
    advance_shared(t, served, top.bytes, n, bytes_per_s);
    if (top.needed) {
      --needed;
      last = std::max(last, t);
    }
    refill();
  }
  return last;
}

// A claim's new reads (their bytes, in manifest order; all needed) as continue_projection_s's
// next(). `fresh` must outlive it.
inline auto fresh_reads(const std::vector<double>& fresh) {
  return [&fresh, i = size_t{0}]() mutable -> std::optional<PlannedRead> {
    if (i == fresh.size()) return std::nullopt;
    return PlannedRead{fresh[i++], true};
  };
}

// Seconds from now until every needed read has finished. `in_flight` are in service now (their
// remaining bytes); `next()` yields the waiting reads in issue order (std::nullopt at the end).
// `needed` is how many needed reads there are in total. 0 when needed is 0. `background`: the
// writes expected to share the device throughout, as that many more requests in service.
template <typename NextFn>
double project_last_finish_s(std::vector<PlannedRead> in_flight, NextFn&& next, uint32_t slots,
                             double bytes_per_s, uint64_t needed, double background = 0) {
  if (needed == 0) return 0.0;
  return continue_projection_s(in_flight, ProjectionPoint{}, 0.0, std::forward<NextFn>(next), slots,
                               bytes_per_s, needed, background);
}

}  // namespace tempokv
