#include "remote/remote_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "remote/node_io.h"
#include "remote/slot.h"

namespace tempokv::remote {

namespace {

bool split_address(const std::string& a, std::string* host, int* port) {
  const size_t colon = a.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  *host = a.substr(0, colon);
  // An IPv6 literal as the daemon's configuration writes it: [::1]:7000.
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  const char* b = a.data() + colon + 1;
  const char* e = a.data() + a.size();
  auto [p, ec] = std::from_chars(b, e, *port);
  return ec == std::errc() && p == e && *port > 0 && *port < 65536;
}

timeval to_timeval(std::chrono::milliseconds ms) {
  return timeval{static_cast<time_t>(ms.count() / 1000),
                 static_cast<suseconds_t>((ms.count() % 1000) * 1000)};
}

}  // namespace

Status RemoteConfig::validate() const {
  if (seeds.empty()) return Status::invalid_argument("remote.seeds must name at least one node");
  for (const auto& s : seeds) {
    std::string h;
    int p = 0;
    if (!split_address(s, &h, &p)) {
      return Status::invalid_argument(
          fmt::format("remote.seeds: '{}' is not host:port with a port in 1..65535", s));
    }
  }
  if (connect_timeout.count() <= 0) {
    return Status::invalid_argument("remote.connect_timeout_ms must be above zero");
  }
  if (io_timeout.count() <= 0)
    return Status::invalid_argument("remote.io_timeout_ms must be above zero");
  if (max_value_bytes == 0)
    return Status::invalid_argument("remote.max_value_bytes must be above zero");
  if (max_redirects < 1) return Status::invalid_argument("remote.max_redirects must be at least 1");
  if (!user.empty() && password.empty()) {
    return Status::invalid_argument("remote.user is set but the password is empty");
  }
  return Status::ok();
}

std::string_view fetch_outcome_name(FetchOutcome o) {
  static constexpr std::string_view kNames[] = {
      "hit",          "absent",    "bad_header", "wrong_key", "wrong_generation",
      "wrong_layout", "too_large", "truncated",  "checksum",  "unavailable"};
  return kNames[static_cast<size_t>(o)];
}

RemoteClient::RemoteClient(RemoteConfig config) : config_(std::move(config)) {
  slot_owner_.fill(-1);
}
RemoteClient::~RemoteClient() = default;

RemoteClient::Node* RemoteClient::node(const std::string& address) {
  for (auto& n : nodes_) {
    if (n->address == address) return n.get();
  }
  auto n = std::make_unique<Node>();
  if (!split_address(address, &n->host, &n->port)) return nullptr;
  n->address = address;
  n->stats.address = address;
  nodes_.push_back(std::move(n));
  return nodes_.back().get();
}

Status RemoteClient::ensure_connected(Node& n) {
  if (n.ctx) return Status::ok();
  const timeval ct = to_timeval(config_.connect_timeout);
  redisContext* c = redisConnectWithTimeout(n.host.c_str(), n.port, ct);
  ++stats_.connects;
  if (!c || c->err) {
    Status s = Status::unavailable(
        fmt::format("remote node {}: connect: {}", n.address, c ? c->errstr : "out of memory"));
    if (c) redisFree(c);
    return s;
  }
  redisSetTimeout(c, to_timeval(config_.io_timeout));
  n.ctx = c;
  if (!config_.password.empty()) {
    std::vector<std::string_view> argv{"AUTH"};
    if (!config_.user.empty()) argv.push_back(config_.user);
    argv.push_back(config_.password);
    auto r = run_command(c, argv);
    if (!r || r.value().error) {
      // The reply's text, never the arguments: the password stays out of every message.
      std::string why = r ? r.value().text : r.status().message();
      fail(n);
      return Status::failed_precondition(
          fmt::format("remote node {}: AUTH{} refused: {}", n.address,
                      config_.user.empty() ? "" : " as user " + config_.user, why));
    }
  }
  return Status::ok();
}

void RemoteClient::fail(Node& n) {
  if (n.ctx) redisFree(n.ctx);
  n.ctx = nullptr;
  n.stats.healthy = false;
  ++n.stats.failures;
  refresh_needed_ = true;
}

Status RemoteClient::connect() {
  if (Status s = config_.validate(); !s) return s;
  for (const auto& s : config_.seeds) node(s);
  return refresh_slots();
}

Status RemoteClient::refresh_slots() {
  ++stats_.slot_refreshes;
  // Seeds and known nodes, healthy ones first: a stopped node would cost a whole deadline.
  std::vector<Node*> order;
  for (auto& n : nodes_) order.push_back(n.get());
  std::stable_partition(order.begin(), order.end(), [](Node* n) { return n->stats.healthy; });
  std::string last_error = "no node to ask";
  for (Node* n : order) {
    if (Status s = ensure_connected(*n); !s) {
      last_error = s.message();
      if (n->ctx == nullptr) n->stats.healthy = false;
      continue;
    }
    auto* r = static_cast<redisReply*>(redisCommand(n->ctx, "CLUSTER SLOTS"));
    if (!r || r->type != REDIS_REPLY_ARRAY) {
      last_error = fmt::format("remote node {}: CLUSTER SLOTS failed", n->address);
      if (r) freeReplyObject(r);
      fail(*n);
      continue;
    }
    std::array<int16_t, 16384> owners;
    owners.fill(-1);
    const std::string asked_host = n->host;
    for (size_t i = 0; i < r->elements; ++i) {
      const redisReply* e = r->element[i];
      if (e->type != REDIS_REPLY_ARRAY || e->elements < 3) continue;
      const redisReply* m = e->element[2];
      if (m->type != REDIS_REPLY_ARRAY || m->elements < 2) continue;
      std::string host(m->element[0]->str ? m->element[0]->str : "", m->element[0]->len);
      if (host.empty()) host = asked_host;
      Node* owner = node(fmt::format("{}:{}", host, m->element[1]->integer));
      if (!owner) continue;
      const auto idx = static_cast<int16_t>(
          std::find_if(nodes_.begin(), nodes_.end(), [&](auto& p) { return p.get() == owner; }) -
          nodes_.begin());
      for (long long s = e->element[0]->integer; s <= e->element[1]->integer && s < 16384; ++s) {
        owners[static_cast<size_t>(s)] = idx;
      }
    }
    freeReplyObject(r);
    slot_owner_ = owners;
    refresh_needed_ = false;
    n->stats.healthy = true;
    return Status::ok();
  }
  return Status::unavailable("remote: no node gave the slot map: " + last_error);
}

std::string RemoteClient::owner_of(std::string_view redis_key) const {
  const int16_t i = slot_owner_[key_slot(redis_key)];
  return i < 0 ? std::string() : nodes_[static_cast<size_t>(i)]->address;
}

std::vector<std::string> RemoteClient::masters() const {
  std::vector<std::string> out;
  for (int16_t i : slot_owner_) {
    if (i >= 0 &&
        std::find(out.begin(), out.end(), nodes_[static_cast<size_t>(i)]->address) == out.end()) {
      out.push_back(nodes_[static_cast<size_t>(i)]->address);
    }
  }
  return out;
}

std::vector<NodeStats> RemoteClient::node_stats() const {
  std::vector<NodeStats> out;
  for (const auto& n : nodes_) out.push_back(n->stats);
  return out;
}

}  // namespace tempokv::remote
