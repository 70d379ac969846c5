// ProviderOptions: the configuration of the staging provider (DESIGN.md §2, §4). A plain value;
// validate() before use.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/units.h"
#include "tempokv/executor.h"
#include "tempokv/status.h"

namespace tempokv {

// Where a committed claim's reads join the queue of reads not yet issued (staging_provider.h,
// "Issue order").
enum class IssueOrder {
  // By the use time of the earliest claim that needs them: a later commit for an earlier use goes
  // ahead of reads already queued, and a claim's retrieval that comes early moves its reads up.
  kUse,
  // By commit: behind every read already queued, so no later commit delays a committed claim and
  // its TTR at commit stands; a retrieval that comes early moves nothing.
  kCommit,
};

struct ProviderOptions {
  // Reads issued to the store at once (staging and demand together); set it at or below the SSD
  // engine's own concurrency so that the TTR projection sees the queue the device sees.
  uint32_t max_reads_in_flight = 16;
  // Aggregate SSD -> fast tier rate the projection uses before any read completed (paper: ~11
  // GiB/s).
  double prior_read_bytes_per_s = 11.0 * static_cast<double>(kGiB);
  // The fixed rate of tempokv-no-state-ttr: static_ttr() = non-resident bytes / this.
  double static_read_bytes_per_s = 11.0 * static_cast<double>(kGiB);
  // Busy time (>= 1 read in flight) gathered into one rate sample.
  Duration calibration_sample = std::chrono::milliseconds(50);
  // Weight of a new sample in the rate's moving average; 0 keeps the prior forever.
  double calibration_weight = 0.25;
  // Device time of one byte the store writes, in units of one byte read (the device's read rate
  // over its write rate), before any sample: learned from completions with the read rate
  // (rate_calibrator.h). The store's writes share the SSD with staging reads: with a positive
  // cost each kind's rate is calibrated over its share of the device time while both are in
  // flight, and TTR adds the time the device needs for the writes already issued (store.h's write
  // listener). 0: writes are not seen (reads only).
  double write_cost = 1.0;
  // The configuration's issue order (issue_order_of() in controller.h gives each policy's).
  IssueOrder issue_order = IssueOrder::kUse;

  // Rejects nonsense with a message naming the field.
  Status validate() const;
};

}  // namespace tempokv
