// RemoteTier: tempokvd's side of the shared KV tier on Redis Cluster (docs/cluster.md). It owns
// the cluster clients and their threads; the ServiceCore calls it on the Executor's thread and
// gets its answers there, so no cluster I/O ever runs on the control thread:
//
// * publish: a put stored locally is published write-behind (WriteBehindPublisher: bounded,
//   a publish beyond the bound dropped and counted, never waited for);
// * probe: a lookup's keys missing locally are asked of the cluster (their 80-byte headers, on
//   the probe thread, stopping at the first absent key and within a bounded time);
// * fetch: an object a claim names that is only in the cluster is fetched on the fetch thread
//   into a 4 KiB-aligned buffer, verified (key, generation, checksum, length; anything else is a
//   miss, never bytes), for the core to put in its local store.
//
// Per-node metrics come from the probe and fetch clients; the fetch thread also reads the
// cluster's eviction count when idle (at most once a second). Built where hiredis is found
// (TEMPOKV_HAVE_REMOTE); elsewhere open() fails naming libhiredis-dev.
//
// Threading: publish() and admit() from any thread; the rest on the Executor's thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/aligned_buffer.h"
#include "common/checksum.h"
#include "daemon/remote_tier_config.h"
#include "tempokv/executor.h"
#include "tempokv/key.h"
#include "tempokv/status.h"

namespace tempokv::service {

struct Metric;

class RemoteTier {
 public:
  // An object the cluster holds, as its header names it.
  struct Found {
    uint64_t payload_bytes = 0;
    uint64_t generation = 0;
    std::string node;  // host:port of the master the slot map names for it
  };
  // A probe's answer: one entry per key asked, in order; nullopt from the first key the cluster
  // does not hold (or could not say in time) on.
  using ProbeDone = std::function<void(std::vector<std::optional<Found>>)>;
  // A verified object: its payload in buffer's first payload_bytes bytes.
  struct Fetched {
    std::shared_ptr<AlignedBuffer> buffer;
    uint64_t payload_bytes = 0;
    Hash128 checksum;
    TokenRange tokens;
  };
  using FetchDone = std::function<void(Result<Fetched>)>;

  // Starts the publisher and the two worker threads; the cluster is reached lazily (a cluster
  // that is down at start is a miss per call, retried on the next one).
  static Result<std::shared_ptr<RemoteTier>> open(Executor& executor,
                                                  const RemoteTierOptions& options);
  virtual ~RemoteTier() = default;

  // Whether a publish of `bytes` would be queued now (the caller copies the bytes only then);
  // false counts the publish as dropped (backpressure). Thread-safe.
  virtual bool admit(uint64_t bytes) = 0;
  // Queues bytes (the payload) for the cluster under the identity; never blocks. Thread-safe.
  virtual void publish(const Key& key, TokenRange tokens, uint64_t generation, Hash128 checksum,
                       std::shared_ptr<const std::vector<unsigned char>> bytes) = 0;
  // done runs on the Executor's thread.
  virtual void probe(std::vector<Key> keys, ProbeDone done) = 0;
  // Fetches key from node (as a probe found it; "" when unknown), expecting payload_bytes and
  // (unless 0) generation; done runs on the Executor's thread with the object or NotFound naming
  // why it was a miss. The fetch counts in the node's bytes in flight until then.
  virtual void fetch(const Key& key, const std::string& node, uint64_t payload_bytes,
                     uint64_t generation, FetchDone done) = 0;
  // The TTR of fetching a claim's objects (node, bytes each) now: latency + (bytes in flight to
  // the node + the claim's bytes there) / the node's measured rate, the slowest node's;
  // nullopt while a node it needs is held unhealthy after a failed call (remote_ttr.h).
  struct Part {
    std::string node;
    uint64_t bytes = 0;
  };
  virtual std::optional<Duration> ttr(const std::vector<Part>& parts) const = 0;
  // An upper bound of ttr() for any parts totalling at most `bytes` on healthy nodes
  // (RemoteTtrModel::ttr_bound).
  virtual Duration ttr_bound(uint64_t bytes) const = 0;
  // Waits until every queued publish has been sent (tests, shutdown); false after the timeout.
  virtual bool flush_publishes(std::chrono::milliseconds timeout) = 0;
  // The remote tier's metrics: publishes, probes and fetches by outcome, and per node.
  virtual void add_metrics(std::vector<Metric>& out) const = 0;
};

}  // namespace tempokv::service
