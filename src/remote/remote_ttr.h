// RemoteTtrModel: how long fetching objects from the cluster takes, per node (docs/cluster.md,
// "Claims"): TTR = latency + the node's learned wait + (bytes in flight to the node + the object's
// bytes) / the node's rate. The rate starts at a prior (remote.node_rate_gib_s) and follows
// completed fetches (an exponentially weighted mean of their bytes/s). The wait is what the
// fetches from the node waited before their transfer beyond this client's own bytes ahead of them
// (other clients' transfers at the node's port, which this client cannot see), learned the same
// way from the callers that measure it (0 until one does); a node whose call failed (node down,
// stopped, timed out) is held unhealthy for a while, during which a fetch from it has no finite TTR
// (the claim recomputes at once instead of waiting out a deadline); the first fetch after the hold
// tries it again. A claim's objects on several nodes move in parallel: its TTR is the largest of
// its nodes' TTRs, each for the claim's bytes on that node.
//
// A plain value on one thread (tempokvd's Executor); time comes from the caller.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tempokv/executor.h"

namespace tempokv::remote {

struct RemoteTtrOptions {
  double prior_bytes_per_s = 2.0 * (1ULL << 30);      // a node's rate before a fetch is measured
  Duration latency = std::chrono::microseconds(200);  // per fetch, before its first byte
  Duration unhealthy_hold = std::chrono::seconds(1);  // after a failed call to the node
  double weight = 0.25;                               // of a new measurement in the node's rate
};

class RemoteTtrModel {
 public:
  explicit RemoteTtrModel(RemoteTtrOptions options = {}) : options_(options) {}

  // One claim's objects: the node that holds each ("" when unknown: the prior's node) and bytes.
  struct Part {
    std::string node;
    uint64_t bytes = 0;
  };
  // The claim's TTR now; nullopt when a node it needs is held unhealthy.
  std::optional<Duration> ttr(const std::vector<Part>& parts, TimePoint now) const;
  // An upper bound of ttr() for any parts totalling at most `bytes` on nodes not held unhealthy:
  // latency + the longest learned wait + (the most bytes in flight to any node + bytes) / the
  // lowest rate of any node (the prior's included: a node not seen yet moves at it).
  Duration ttr_bound(uint64_t bytes) const;
  // The wait the model expects of a fetch from node called now behind this client's own bytes in
  // flight there (their time at the node's rate): the caller takes it before started() and gives
  // it back to finished() with the wait it measured.
  Duration own_wait(const std::string& node) const;
  // A fetch of bytes from node began / ended (took: its transfer's own time; node_failed: the node
  // did not answer in time, or the connection broke, not a miss of the object). `waited`, when
  // the caller measures it: the time from the call to the transfer's start; the node's wait
  // learns waited - own_wait (at least 0).
  void started(const std::string& node, uint64_t bytes);
  void finished(const std::string& node, uint64_t bytes, Duration took, bool ok, bool node_failed,
                TimePoint now, std::optional<Duration> waited = std::nullopt,
                Duration own_wait = Duration::zero());

  double rate(const std::string& node) const;  // bytes/s
  Duration wait(const std::string& node) const;  // the learned wait behind other clients
  uint64_t in_flight(const std::string& node) const;
  bool healthy(const std::string& node, TimePoint now) const;

 private:
  struct Node {
    double rate = 0;  // 0: not measured yet
    double wait_s = -1;  // < 0: not measured yet
    uint64_t in_flight = 0;
    std::optional<TimePoint> unhealthy_until;
  };
  const Node* find(const std::string& node) const;

  RemoteTtrOptions options_;
  std::map<std::string, Node> nodes_;
};

}  // namespace tempokv::remote
