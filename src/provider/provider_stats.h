// ProviderStats: the StagingProvider's counters (StagingProvider::stats()), cumulative unless
// marked "now".
#pragma once

#include <cstdint>

namespace tempokv {

struct ProviderStats {
  uint64_t commits = 0;          // commits that succeeded
  uint64_t ready_at_commit = 0;  // of those, stage-ready at once
  uint64_t refusals = 0;         // commits refused for budget or capacity (they cost nothing)
  uint64_t invalid = 0;          // commits / ordinary claims refused: object missing or changed
  // Fast-tier copies of an older generation of their store object, evicted when found; and claims
  // failed because their object changed in the store under them (no other bytes are served).
  uint64_t stale_copies_dropped = 0;
  uint64_t changed_under_claim = 0;
  uint64_t staged = 0;           // committed claims that became stage-ready later
  uint64_t failed = 0;           // claims failed by a read error
  uint64_t releases = 0;
  uint64_t cancels = 0;
  uint64_t ordinary = 0;  // ordinary claims started
  uint64_t reads_issued = 0;
  uint64_t demand_reads = 0;  // of those, issued with no committed claim needing the object
  uint64_t bytes_read = 0;    // payload bytes of successful reads
  uint64_t read_errors = 0;
  uint64_t coalesced = 0;        // objects covered by a read already queued or in flight
  uint64_t queued_reads = 0;     // now
  uint64_t in_flight_reads = 0;  // now
  uint64_t claims = 0;           // known now, draining included
  uint64_t draining_claims = 0;  // now
  uint64_t ordinary_waiting = 0;  // now: ordinary claims waiting for room to be admitted
  double read_bytes_per_s = 0;    // the calibrated read rate
  double write_cost = 0;  // the calibrated device time of a byte written, in bytes read (0: unseen)
  // The learned mean of seen writes in flight while reads are (the projection's background).
  double writes_while_reading = 0;
  uint64_t store_writes_in_flight = 0;  // now: the store's writes issued to the device
  uint64_t store_write_bytes_in_flight = 0;
  uint64_t rate_samples = 0;
  // Objects not in the store fetched from the remote source as a committed claim's staging.
  uint64_t remote_fetches = 0;        // started
  uint64_t remote_fetch_errors = 0;   // failed (their claims failed with them)
  uint64_t remote_fetching = 0;       // now: in flight (for a claim, or a prefetch)
  // Of remote_fetches: started by prefetch() for a claim not committed yet, reserving nothing.
  uint64_t remote_prefetches = 0;
  uint64_t remote_prefetch_errors = 0;  // of remote_fetch_errors: with no claim waiting
  uint64_t remote_refusals = 0;       // commits refused: a node they needed was held unhealthy
};

}  // namespace tempokv
