#include "eval/sim_remote_source.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace tempokv {

std::string SimRemoteSource::node(const Key& key) const {
  return "node-" + std::to_string(cluster_.node_of(key));
}

std::optional<Duration> SimRemoteSource::ttr(std::span<const Object> objects) const {
  std::map<std::string, uint64_t> by_node;  // an in-flight object (bytes 0) still names its node
  for (const Object& o : objects) by_node[node(o.key)] += o.bytes;
  std::vector<remote::RemoteTtrModel::Part> parts;
  for (const auto& [n, bytes] : by_node) parts.push_back({n, bytes});
  return model_.ttr(parts, executor_.now());
}

void SimRemoteSource::fetch(const Key& key, uint64_t payload_bytes, FetchDone done) {
  const auto held = cluster_.find(key);
  std::weak_ptr<int> alive = alive_;
  if (!held || held->first != payload_bytes) {
    ++stats_.failures;
    executor_.post([alive, key, done = std::move(done)] {
      if (!alive.expired()) done(Status::not_found("remote: " + key.to_string() + " absent"));
    });
    return;
  }
  const std::string n = node(key);
  const Object self{key, payload_bytes};
  const std::optional<Duration> projected = ttr({&self, 1});
  const Duration own_wait = model_.own_wait(n);
  model_.started(n, payload_bytes);
  const TokenRange tokens = held->second;
  const TimePoint called = executor_.now();
  cluster_.fetch(engine_, {{key, payload_bytes}},
                 [this, alive, key, n, payload_bytes, tokens, projected, called, own_wait,
                  done = std::move(done)](Duration took) mutable {
                   if (alive.expired()) return;
                   // The model learns the rate from the transfer's own time and the node's wait
                   // from the rest (the time behind the transfers ahead at the pipes); its
                   // projection covered both, so it is judged on the whole.
                   const Duration total = executor_.now() - called;
                   model_.finished(n, payload_bytes, took, true, false, executor_.now(),
                                   total - took, own_wait);
                   ++stats_.fetches;
                   stats_.bytes += payload_bytes;
                   const double t = to_seconds(executor_.now() - called);
                   stats_.took_s.push_back(t);
                   if (projected && t > 0) {
                     stats_.ttr_rel_error.push_back(std::abs(to_seconds(*projected) - t) / t);
                   }
                   // Into the engine's store (its SSD's write), then the provider reads it.
                   store_.put(key, tokens, nullptr, payload_bytes,
                              [this, alive, key, done = std::move(done)](Status st) {
                                if (alive.expired()) return;
                                std::optional<ObjectInfo> info = store_.lookup(key);
                                if (!st.is_ok() || !info) {
                                  ++stats_.failures;
                                  done(st.is_ok() ? Status::not_found("remote: put lost") : st);
                                  return;
                                }
                                done(info->generation);
                              });
                 });
}

std::optional<ObjectInfo> RemoteLookupStore::lookup(const Key& key) const {
  if (std::optional<ObjectInfo> local = store_.lookup(key)) return local;
  const auto held = cluster_.find(key);
  if (!held) return std::nullopt;
  ObjectInfo info;
  info.key = key;
  info.payload_bytes = held->first;
  info.tokens = held->second;
  return info;
}

}  // namespace tempokv
