#include "remote/remote_ttr.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>

namespace tempokv::remote {

const RemoteTtrModel::Node* RemoteTtrModel::find(const std::string& node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? nullptr : &it->second;
}

double RemoteTtrModel::rate(const std::string& node) const {
  const Node* n = find(node);
  return n != nullptr && n->rate > 0 ? n->rate : options_.prior_bytes_per_s;
}

uint64_t RemoteTtrModel::in_flight(const std::string& node) const {
  const Node* n = find(node);
  return n == nullptr ? 0 : n->in_flight;
}

bool RemoteTtrModel::healthy(const std::string& node, TimePoint now) const {
  const Node* n = find(node);
  return n == nullptr || !n->unhealthy_until || now >= *n->unhealthy_until;
}

std::optional<Duration> RemoteTtrModel::ttr(const std::vector<Part>& parts, TimePoint now) const {
  std::map<std::string, uint64_t> by_node;
  for (const Part& p : parts) by_node[p.node] += p.bytes;
  Duration worst = Duration::zero();
  for (const auto& [node, bytes] : by_node) {
    if (!healthy(node, now)) return std::nullopt;
    const double seconds = double(in_flight(node) + bytes) / rate(node);
    const Duration t = options_.latency +
                       std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
    worst = std::max(worst, t);
  }
  return worst;
}

Duration RemoteTtrModel::ttr_bound(uint64_t bytes) const {
  uint64_t most_in_flight = 0;
  double lowest_rate = options_.prior_bytes_per_s;
  for (const auto& [node, n] : nodes_) {
    most_in_flight = std::max(most_in_flight, n.in_flight);
    if (n.rate > 0) lowest_rate = std::min(lowest_rate, n.rate);
  }
  // Rounded up, with a nanosecond for ttr()'s own rounding.
  const double seconds = double(most_in_flight + bytes) / lowest_rate;
  return options_.latency + Duration(static_cast<int64_t>(std::ceil(seconds * 1e9)) + 1);
}

void RemoteTtrModel::started(const std::string& node, uint64_t bytes) {
  nodes_[node].in_flight += bytes;
}

void RemoteTtrModel::finished(const std::string& node, uint64_t bytes, Duration took, bool ok,
                              bool node_failed, TimePoint now) {
  Node& n = nodes_[node];
  assert(n.in_flight >= bytes);
  n.in_flight -= std::min(n.in_flight, bytes);
  if (node_failed) {
    n.unhealthy_until = now + options_.unhealthy_hold;
    return;
  }
  n.unhealthy_until.reset();  // it answered
  const double seconds = std::chrono::duration<double>(took).count();
  if (!ok || seconds <= 0 || bytes == 0) return;
  const double measured = double(bytes) / seconds;
  n.rate = n.rate > 0 ? (1 - options_.weight) * n.rate + options_.weight * measured : measured;
}

}  // namespace tempokv::remote
