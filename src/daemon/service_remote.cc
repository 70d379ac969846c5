// ServiceCore and the shared remote tier (docs/cluster.md): lookups that miss locally ask the
// cluster, claims on objects only the cluster holds fetch them into the local store first, and
// puts are published write-behind. All cluster I/O runs on RemoteTier's threads; this file runs
// on the Executor's thread only.
#include <memory>

#include "daemon/remote_tier.h"
#include "daemon/service_core.h"
#include "daemon/service_metrics.h"
#include "daemon/service_state.h"

namespace tempokv::service {
namespace {

// remote_seen_ is cleared when it passes this many keys (a lookup's probe refills what a claim
// needs; a claim whose key was forgotten fetches any generation, still verified).
constexpr size_t kRemoteSeenKept = 1 << 16;

}  // namespace

bool ServiceCore::remote_lookup(Session& s, uint64_t id, const std::vector<Key>& keys,
                                std::vector<uint64_t> bytes) {
  if (!remote_) return false;
  size_t first = 0;
  while (first < bytes.size() && bytes[first] != 0) ++first;
  if (first == bytes.size()) return false;  // every key is stored here
  // The keys missing here from the first one on; the probe stops at the first the cluster lacks
  // (a prefix ends there anyway).
  std::vector<size_t> asked;
  std::vector<Key> probe_keys;
  for (size_t i = first; i < keys.size(); ++i) {
    if (bytes[i] != 0) continue;
    asked.push_back(i);
    probe_keys.push_back(keys[i]);
  }
  ++remote_counters_.lookups;
  std::weak_ptr<int> alive = alive_;
  remote_->probe(
      std::move(probe_keys),
      [this, alive, session = s.id, id, keys, asked,
       bytes = std::move(bytes)](std::vector<std::optional<RemoteTier::Found>> found) mutable {
        if (alive.expired()) return;
        if (remote_seen_.size() > kRemoteSeenKept) remote_seen_.clear();
        for (size_t j = 0; j < asked.size(); ++j) {
          if (!found[j]) break;
          bytes[asked[j]] = found[j]->payload_bytes;
          remote_seen_[keys[asked[j]]] = {found[j]->generation, found[j]->node};
          ++remote_counters_.lookup_objects;
        }
        if (!sessions_.count(session)) return;
        std::vector<ManifestEntry> held;  // the leading keys, here or in the cluster
        for (size_t i = 0; i < keys.size() && bytes[i] != 0; ++i)
          held.push_back({keys[i], bytes[i]});
        send_(session, encode_lookup_reply(id, bytes, controller_->committable_prefix(held)));
      });
  return true;
}

bool ServiceCore::remote_report_hit(Session& s, uint64_t id, const ReportHit& m) {
  if (!remote_ || m.manifest.size() > options_.max_manifest_entries) return false;
  if (!owned(s, m.request_id, "report_hit").is_ok()) return false;  // report_hit says why
  std::vector<ManifestEntry> missing;
  for (const ManifestEntry& e : m.manifest) {
    if (!store_->contains(e.key)) missing.push_back(e);
  }
  if (missing.empty()) return false;
  ++remote_counters_.claims;
  // Their TTR from the nodes' state. A node held unhealthy after a failed call, or a TTR above
  // remote.max_claim_fetch_ms (the engine waits for this reply): recompute now rather than wait
  // out a deadline or a slow fetch.
  std::vector<RemoteTier::Part> parts;
  std::vector<RemoteSeen> seen;
  for (const ManifestEntry& e : missing) {
    auto it = remote_seen_.find(e.key);
    seen.push_back(it == remote_seen_.end() ? RemoteSeen{} : it->second);
    parts.push_back({seen.back().node, e.bytes});
  }
  const std::optional<Duration> ttr = remote_->ttr(parts);
  auto refuse = [&](uint64_t& counter, const std::string& why) {
    ++counter;
    ++counters_.errors;
    const Status st =
        Status::not_found("report_hit: objects only in the cluster, " + why + ": recompute");
    send_(s.id, encode_error(id, to_runtime_ids(st, Op(m), s.runtime->id_salt)));
    return true;
  };
  if (!ttr) {
    std::string nodes;
    for (const RemoteTier::Part& p : parts) nodes += (nodes.empty() ? "" : ", ") + p.node;
    return refuse(remote_counters_.refused_unhealthy,
                  "on a node held unhealthy after a failed call (" + nodes + ")");
  }
  if (*ttr > options_.remote.max_claim_fetch) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*ttr).count();
    return refuse(remote_counters_.refused_slow,
                  "remote TTR " + std::to_string(ms) + " ms above remote.max_claim_fetch_ms (" +
                      std::to_string(options_.remote.max_claim_fetch.count()) + ")");
  }
  const TimePoint fetch_start = executor_.now();
  struct Pending {
    size_t left = 0;
    Status error;
  };
  const Duration projected = *ttr;
  auto pending = std::make_shared<Pending>();
  pending->left = missing.size();
  std::weak_ptr<int> alive = alive_;
  // Runs once every object has been fetched and stored (or missed): the report_hit as usual.
  auto finish = [this, alive, pending, session = s.id, id, m, projected, fetch_start] {
    if (alive.expired() || --pending->left != 0) return;
    if (pending->error.is_ok()) {
      ++remote_counters_.timed;
      remote_counters_.ttr_projected_s += std::chrono::duration<double>(projected).count();
      remote_counters_.fetch_s +=
          std::chrono::duration<double>(executor_.now() - fetch_start).count();
    }
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return;
    Session& owner = *it->second;
    Status st = pending->error;
    if (st.is_ok())
      st = shutting_down_ ? Status::unavailable("tempokvd is shutting down") : report_hit(owner, m);
    if (st.is_ok()) {
      send_(session, encode_reply(id));
      return;
    }
    ++counters_.errors;
    send_(session, encode_error(id, to_runtime_ids(st, Op(m), owner.runtime->id_salt)));
  };
  for (size_t i = 0; i < missing.size(); ++i) {
    const ManifestEntry& e = missing[i];
    remote_->fetch(e.key, seen[i].node, e.bytes, seen[i].generation,
                   [this, alive, pending, finish, key = e.key](Result<RemoteTier::Fetched> r) {
                     if (alive.expired()) return;
                     if (!r.is_ok()) {
                       ++remote_counters_.misses;
                       if (pending->error.is_ok()) {
                         pending->error = Status::not_found(
                             "report_hit: object " + key.to_string() +
                             " is not in the SSD store and " + r.status().message());
                       }
                       return finish();
                     }
                     if (shutting_down_) {  // the store closes once its puts drain
                       if (pending->error.is_ok()) {
                         pending->error = Status::unavailable("tempokvd is shutting down");
                       }
                       return finish();
                     }
                     std::shared_ptr<AlignedBuffer> buffer = r->buffer;
                     const uint64_t n = r->payload_bytes;
                     ++puts_in_flight_;  // shutdown waits for it, as for a client's put
                     store_->put_hashed(key, r->tokens, buffer->data(), n, r->checksum,
                                        [this, pending, finish, buffer, n](Status st) {
                                          --puts_in_flight_;
                                          if (st.is_ok()) {
                                            ++remote_counters_.objects_stored;
                                            remote_counters_.bytes_stored += n;
                                          } else if (pending->error.is_ok()) {
                                            pending->error = st;
                                          }
                                          finish();
                                          check_shutdown();
                                        });
                   });
  }
  return true;
}

Store::DoneCallback ServiceCore::publish_after_put(
    const Key& key, TokenRange tokens, Hash128 checksum,
    std::shared_ptr<const std::vector<unsigned char>> copy, Store::DoneCallback done) {
  if (!remote_ || !copy) return done;
  return [this, key, tokens, checksum, copy = std::move(copy),
          done = std::move(done)](Status st) mutable {
    // The generation the store gave these bytes (the same bytes put again keep theirs).
    std::optional<ObjectInfo> info = st.is_ok() ? store_->lookup(key) : std::nullopt;
    if (info && info->checksum_lo == checksum.low && info->checksum_hi == checksum.high) {
      remote_->publish(key, tokens, info->generation, checksum, std::move(copy));
      ++remote_counters_.puts_published;
    }
    done(st);
  };
}

void ServiceCore::add_remote_metrics(std::vector<Metric>& m) const {
  remote_->add_metrics(m);
  const RemoteCounters& c = remote_counters_;
  auto add = [&](std::string name, std::string help, double value) {
    m.push_back(Metric{std::move(name), std::move(help), MetricType::kCounter, {}, value});
  };
  add("remote_lookups_total", "Lookups that asked the cluster for keys missing here",
      double(c.lookups));
  add("remote_lookup_objects_total", "Objects a lookup found only in the cluster",
      double(c.lookup_objects));
  add("remote_claims_total", "Claims that named objects only the cluster held", double(c.claims));
  add("remote_objects_stored_total", "Objects fetched from the cluster into the store",
      double(c.objects_stored));
  add("remote_bytes_stored_total", "Payload bytes fetched from the cluster into the store",
      double(c.bytes_stored));
  add("remote_claim_misses_total",
      "Objects a claim needed that the cluster did not serve verified (the claim fails, the "
      "engine recomputes)",
      double(c.misses));
  add("remote_puts_published_total", "Puts handed to the write-behind publisher",
      double(c.puts_published));
  add("remote_claims_refused_unhealthy_total",
      "Claims on objects only in the cluster refused at once: a node they need was held "
      "unhealthy after a failed call (the engine recomputes)",
      double(c.refused_unhealthy));
  add("remote_claims_refused_slow_total",
      "Claims on objects only in the cluster refused at once: their remote TTR was above "
      "remote.max_claim_fetch_ms (the engine recomputes)",
      double(c.refused_slow));
  add("remote_claims_timed_total", "Claims whose remote objects were all fetched", double(c.timed));
  add("remote_claim_ttr_projected_seconds_total",
      "Sum over the timed claims of the remote TTR projected at their report", c.ttr_projected_s);
  add("remote_claim_fetch_seconds_total",
      "Sum over the timed claims of the time their remote objects took to reach the store",
      c.fetch_s);
}

}  // namespace tempokv::service
