// SimRemoteCluster: the shared cluster and network of the simulated fleet (docs/fleet.md), its
// own truth: which objects the cluster holds (whatever any engine published, once its bytes have
// crossed the network) and how long moving them takes. Every engine host and every cluster node
// has a network port of `port_bytes_per_s` each way, a FIFO pipe: a transfer starts when both
// ends' pipes are free, takes bytes / rate on them and lands after a latency (with a tail no
// estimator is told of). Objects live on node hash(key) mod nodes. Nothing here is read by the
// estimators: the fleet's router times fetches with remote::RemoteTtrModel, which learns the
// rates from the fetches it sees finish.
//
// Threading: the simulation's executor thread only; callbacks run there.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tempokv/executor.h"
#include "tempokv/key.h"

namespace tempokv {

struct SimNetworkOptions {
  uint32_t nodes = 8;              // cluster nodes holding objects
  double port_bytes_per_s = 25e9;  // per engine host and per node, each direction
  Duration latency = std::chrono::microseconds(30);
  double tail_probability = 0.01;  // a transfer's latency × tail_factor
  double tail_factor = 100;        // 3 ms stalls
  uint64_t seed = 1;
};

struct SimRemoteStats {
  uint64_t published = 0, published_bytes = 0;
  uint64_t fetched = 0, fetched_bytes = 0;
};

class SimRemoteCluster {
 public:
  SimRemoteCluster(Executor& executor, uint32_t engines, SimNetworkOptions options);
  ~SimRemoteCluster();
  SimRemoteCluster(const SimRemoteCluster&) = delete;
  SimRemoteCluster& operator=(const SimRemoteCluster&) = delete;

  uint32_t node_of(const Key& key) const;
  // The cluster holds the object (its publish has landed).
  bool contains(const Key& key) const { return held_.count(key) != 0; }
  // The object's payload bytes and tokens while the cluster holds it.
  std::optional<std::pair<uint64_t, TokenRange>> find(const Key& key) const;
  // Engine `engine` publishes an object it stored (write-behind): held once its bytes landed.
  // Nothing when the cluster holds it or a publish of it is under way.
  void publish(uint32_t engine, const Key& key, uint64_t bytes, TokenRange tokens);
  // Engine `engine` fetches objects the cluster holds; done(took) once the last has landed, took
  // from the first one's start on the pipes (the wait behind earlier transfers not included).
  struct Object {
    Key key;
    uint64_t bytes = 0;
  };
  void fetch(uint32_t engine, const std::vector<Object>& objects,
             std::function<void(Duration took)> done);
  SimRemoteStats stats() const { return stats_; }

 private:
  // One transfer from pipe `from` to pipe `to` (each a direction of a port): when it starts on
  // them and when it lands.
  std::pair<TimePoint, TimePoint> transfer(TimePoint& from, TimePoint& to, uint64_t bytes);

  Executor& executor_;
  SimNetworkOptions options_;
  std::vector<TimePoint> engine_in_, engine_out_, node_in_, node_out_;  // pipes free at
  std::unordered_map<Key, std::pair<uint64_t, TokenRange>> held_;
  std::unordered_set<Key> publishing_;
  uint64_t rng_;
  SimRemoteStats stats_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace tempokv
