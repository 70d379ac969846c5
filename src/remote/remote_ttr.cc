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

Duration RemoteTtrModel::wait(const std::string& node) const {
  const Node* n = find(node);
  return n != nullptr && n->wait_s > 0 ? from_seconds(n->wait_s) : Duration::zero();
}

Duration RemoteTtrModel::own_wait(const std::string& node) const {
  return from_seconds(double(in_flight(node)) / rate(node));
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
    const Duration t = options_.latency + wait(node) + from_seconds(seconds);
    worst = std::max(worst, t);
  }
  return worst;
}

Duration RemoteTtrModel::ttr_bound(uint64_t bytes) const {
  uint64_t most_in_flight = 0;
  double lowest_rate = options_.prior_bytes_per_s;
  Duration longest_wait = Duration::zero();
  for (const auto& [node, n] : nodes_) {
    most_in_flight = std::max(most_in_flight, n.in_flight);
    if (n.rate > 0) lowest_rate = std::min(lowest_rate, n.rate);
    longest_wait = std::max(longest_wait, wait(node));
  }
  // Rounded up, with a nanosecond for ttr()'s own rounding.
  const double seconds = double(most_in_flight + bytes) / lowest_rate;
  return options_.latency + longest_wait +
         Duration(static_cast<int64_t>(std::ceil(seconds * 1e9)) + 1);
}

void RemoteTtrModel::started(const std::string& node, uint64_t bytes) {
  nodes_[node].in_flight += bytes;
}

void RemoteTtrModel::finished(const std::string& node, uint64_t bytes, Duration took, bool ok,
                              bool node_failed, TimePoint now, std::optional<Duration> waited,
                              Duration own_wait) {
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
  // The first measurement replaces the unmeasured value; later ones move it by the weight.
  auto follow = [w = options_.weight](double& mean, bool measured, double sample) {
    mean = measured ? (1 - w) * mean + w * sample : sample;
  };
  follow(n.rate, n.rate > 0, double(bytes) / seconds);
  if (waited) follow(n.wait_s, n.wait_s >= 0, std::max(0.0, to_seconds(*waited - own_wait)));
}

}  // namespace tempokv::remote
