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

std::optional<std::pair<uint64_t, TokenRange>> SimRemoteCluster::find(const Key& key) const {
  auto it = held_.find(key);
  if (it == held_.end()) return std::nullopt;
  return it->second;
}

std::pair<TimePoint, TimePoint> SimRemoteCluster::transfer(TimePoint& from, TimePoint& to,
                                                           uint64_t bytes) {
  const TimePoint begin = std::max({executor_.now(), from, to});
  const TimePoint end = begin + from_seconds(double(bytes) / options_.port_bytes_per_s);
  from = to = end;
  Duration latency = options_.latency;
  if (uniform01(rng_) < options_.tail_probability) {
    latency = from_seconds(to_seconds(latency) * options_.tail_factor);
  }
  return {begin, end + latency};
}

void SimRemoteCluster::publish(uint32_t engine, const Key& key, uint64_t bytes, TokenRange tokens) {
  if (held_.count(key) || !publishing_.insert(key).second) return;
  const TimePoint lands = transfer(engine_out_.at(engine), node_in_[node_of(key)], bytes).second;
  std::weak_ptr<int> alive = alive_;
  executor_.at(lands, [this, alive, key, bytes, tokens] {
    if (alive.expired()) return;
    publishing_.erase(key);
    held_[key] = {bytes, tokens};
    ++stats_.published;
    stats_.published_bytes += bytes;
  });
}

void SimRemoteCluster::fetch(uint32_t engine, const std::vector<Object>& objects,
                             std::function<void(Duration)> done) {
  std::optional<TimePoint> start;
  TimePoint last = executor_.now();
  for (const Object& o : objects) {
    const auto [begin, lands] = transfer(node_out_[node_of(o.key)], engine_in_.at(engine), o.bytes);
    if (!start) start = begin;
    last = std::max(last, lands);
    ++stats_.fetched;
    stats_.fetched_bytes += o.bytes;
  }
  std::weak_ptr<int> alive = alive_;
  const Duration took = last - start.value_or(last);
  executor_.at(last, [alive, took, done = std::move(done)] {
    if (!alive.expired()) done(took);
  });
}

}  // namespace tempokv
