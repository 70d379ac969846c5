#include "eval/sim_remote.h"

#include <algorithm>

#include "common/splitmix.h"

namespace tempokv {

SimRemoteCluster::SimRemoteCluster(Executor& executor, uint32_t engines, SimNetworkOptions options)
    : executor_(executor),
      options_(options),
      engine_in_(engines),
      engine_out_(engines),
      node_in_(options.nodes),
      node_out_(options.nodes),
      rng_(options.seed * 0x9e3779b97f4a7c15ULL + 3) {}

SimRemoteCluster::~SimRemoteCluster() = default;

uint32_t SimRemoteCluster::node_of(const Key& key) const {
  return static_cast<uint32_t>(splitmix64_mix(key.hash ^ key.model) % options_.nodes);
}

TimePoint SimRemoteCluster::transfer(TimePoint& from, TimePoint& to, uint64_t bytes) {
  const TimePoint begin = std::max({executor_.now(), from, to});
  const TimePoint end = begin + from_seconds(double(bytes) / options_.port_bytes_per_s);
  from = to = end;
  Duration latency = options_.latency;
  if (uniform01(rng_) < options_.tail_probability) {
    latency = from_seconds(to_seconds(latency) * options_.tail_factor);
  }
  return end + latency;
}

void SimRemoteCluster::publish(uint32_t engine, const Key& key, uint64_t bytes) {
  if (held_.count(key) || !publishing_.insert(key).second) return;
  const TimePoint lands = transfer(engine_out_.at(engine), node_in_[node_of(key)], bytes);
  std::weak_ptr<int> alive = alive_;
  executor_.at(lands, [this, alive, key, bytes] {
    if (alive.expired()) return;
    publishing_.erase(key);
    held_.insert(key);
    ++stats_.published;
    stats_.published_bytes += bytes;
  });
}

void SimRemoteCluster::fetch(uint32_t engine, const std::vector<Object>& objects,
                             std::function<void(Duration)> done) {
  const TimePoint start = executor_.now();
  TimePoint last = start;
  for (const Object& o : objects) {
    last = std::max(last, transfer(node_out_[node_of(o.key)], engine_in_.at(engine), o.bytes));
    ++stats_.fetched;
    stats_.fetched_bytes += o.bytes;
  }
  std::weak_ptr<int> alive = alive_;
  executor_.at(last, [alive, start, last, done = std::move(done)] {
    if (!alive.expired()) done(last - start);
  });
}

}  // namespace tempokv
