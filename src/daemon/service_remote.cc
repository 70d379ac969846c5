// ServiceCore and the shared remote tier (docs/cluster.md): lookups that miss locally ask the
// cluster, claims on objects only the cluster holds are committed by the provider with the remote
// part in their TTR and fetched into the local store as their staging (RemoteStaging, the
// provider's RemoteSource), and puts are published write-behind. All cluster I/O runs on RemoteTier's threads; this file runs
// on the Executor's thread only.
#include <memory>
#include <span>
#include <string>

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
  std::vector<RemoteTier::Part> parts;
  for (const ManifestEntry& e : m.manifest) {
    if (store_->contains(e.key)) continue;
    auto it = remote_seen_.find(e.key);
    parts.push_back({it == remote_seen_.end() ? std::string() : it->second.node, e.bytes});
  }
  if (parts.empty()) return false;
  ++remote_counters_.claims;
  // Their remote TTR from the nodes' state. A node held unhealthy after a failed call, or a TTR
  // above remote.max_claim_fetch_ms: recompute now rather than wait out a deadline or a slow
  // fetch. Otherwise the report_hit runs as usual: the provider commits the claim by the laxity
  // rule with the remote part in its TTR and fetches the objects as its staging.
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
  return false;
}

// The provider's RemoteSource over the cluster: objects a lookup's probe found there, their TTR
// from RemoteTier's model, and fetches verified and put in the local store.
class ServiceCore::RemoteStaging final : public RemoteSource {
 public:
  explicit RemoteStaging(ServiceCore& core) : core_(core) {}

  bool holds(const Key& key) const override { return core_.remote_seen_.count(key) != 0; }

  std::optional<Duration> ttr(std::span<const Object> objects) const override {
    std::vector<RemoteTier::Part> parts;
    parts.reserve(objects.size());
    for (const Object& o : objects) parts.push_back({core_.seen(o.key).node, o.bytes});
    return core_.remote_->ttr(parts);
  }

  Duration ttr_bound(uint64_t bytes) const override { return core_.remote_->ttr_bound(bytes); }

  void fetch(const Key& key, uint64_t payload_bytes, FetchDone done) override {
    const RemoteSeen seen = core_.seen(key);
    // What the model projects for this object alone now (its own bytes and those ahead of it on
    // the node), against what the fetch and the store's put then take.
    const Duration projected =
        core_.remote_->ttr({{seen.node, payload_bytes}}).value_or(Duration::zero());
    const TimePoint start = core_.executor_.now();
    std::weak_ptr<int> alive = core_.alive_;
    ServiceCore* core = &core_;
    core_.remote_->fetch(
        key, seen.node, payload_bytes, seen.generation,
        [core, alive, key, projected, start, done = std::move(done)](
            Result<RemoteTier::Fetched> r) mutable {
          if (alive.expired()) return;
          if (!r.is_ok()) {
            ++core->remote_counters_.misses;
            return done(r.status());  // it names the key and the reason
          }
          if (core->shutting_down_) {  // the store closes once its puts drain
            return done(Status::unavailable("tempokvd is shutting down"));
          }
          std::shared_ptr<AlignedBuffer> buffer = r->buffer;
          const uint64_t n = r->payload_bytes;
          ++core->puts_in_flight_;  // shutdown waits for it, as for a client's put
          core->store_->put_hashed(
              key, r->tokens, buffer->data(), n, r->checksum,
              [core, key, buffer, n, projected, start, done = std::move(done)](Status st) {
                --core->puts_in_flight_;
                std::optional<ObjectInfo> info =
                    st.is_ok() ? core->store_->lookup(key) : std::nullopt;
                if (info) {
                  RemoteCounters& c = core->remote_counters_;
                  ++c.objects_stored;
                  c.bytes_stored += n;
                  ++c.timed;
                  c.ttr_projected_s += std::chrono::duration<double>(projected).count();
                  c.fetch_s +=
                      std::chrono::duration<double>(core->executor_.now() - start).count();
                  done(info->generation);
                } else {
                  done(st.is_ok() ? Status::not_found("remote fetch of " + key.to_string() +
                                                      ": left the store as it was put")
                                  : st);
                }
                core->check_shutdown();
              });
        });
  }

 private:
  ServiceCore& core_;
};

ServiceCore::RemoteSeen ServiceCore::seen(const Key& key) const {
  auto it = remote_seen_.find(key);
  return it == remote_seen_.end() ? RemoteSeen{} : it->second;
}

void ServiceCore::attach_remote_source() {
  remote_source_ = std::make_unique<RemoteStaging>(*this);
  provider_->set_remote_source(remote_source_.get());
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
      "Fetches of objects a claim needed that the cluster did not serve verified (a committed "
      "claim fails and the engine recomputes; a claim's first-stage fetch fails no claim)",
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
  const ProviderStats ps = provider_->stats();
  add("remote_claim_fetches_total",
      "Objects only in the cluster whose fetch a claim started, committed or in its first stage",
      double(ps.remote_fetches));
  add("remote_claim_prefetches_total",
      "Of those, fetches started by a claim's first stage (nothing reserved; remote.prefetch)",
      double(ps.remote_prefetches));
  add("remote_claim_fetch_errors_total",
      "Of those, fetches that failed (a committed claim's failed it: the engine recomputes)",
      double(ps.remote_fetch_errors));
  add("remote_claim_prefetch_errors_total",
      "Of the failed fetches, first-stage ones (no claim failed; its commit fetches once more)",
      double(ps.remote_prefetch_errors));
  add("remote_claims_refused_at_commit_total",
      "Commits refused: an object only in the cluster was on a node held unhealthy",
      double(ps.remote_refusals));
  m.push_back(Metric{"remote_claim_fetching",
                     "Objects being fetched from the cluster for claims now",
                     MetricType::kGauge, {}, double(ps.remote_fetching)});
  add("remote_claims_timed_total",
      "Objects fetched into the store for a claim (its staging or its first stage)",
      double(c.timed));
  add("remote_claim_ttr_projected_seconds_total",
      "Sum over the timed fetches of the remote TTR projected as each started", c.ttr_projected_s);
  add("remote_claim_fetch_seconds_total",
      "Sum over the timed fetches of the time each took to reach the store (verified and put)",
      c.fetch_s);
}

}  // namespace tempokv::service
