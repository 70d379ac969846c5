// RemoteTier over src/remote (docs/cluster.md): the write-behind publisher and two worker
// threads, each with its own RemoteClient (probes apart from fetches, so a lookup's probe never
// waits behind a large fetch).
#include "daemon/remote_tier.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "daemon/service_metrics.h"
#include "remote/publisher.h"
#include "remote/remote_client.h"
#include "remote/remote_ttr.h"

namespace tempokv::service {
namespace {

using Clock = std::chrono::steady_clock;

// A probe stops asking after this long (the rest count as absent): a lookup's client waits at
// most its lookup_timeout (250 ms by default) before it recomputes anyway.
constexpr std::chrono::milliseconds kProbeBudget{200};

remote::RemoteConfig client_config(const RemoteTierOptions& o) {
  remote::RemoteConfig c;
  c.seeds = o.seeds;
  c.user = o.user;
  c.password = o.password;
  c.connect_timeout = o.connect_timeout;
  c.io_timeout = o.io_timeout;
  c.max_value_bytes = o.max_value_bytes;
  return c;
}

remote::RemoteTtrOptions ttr_options(const RemoteTierOptions& o) {
  remote::RemoteTtrOptions t;
  t.prior_bytes_per_s = o.node_rate_bytes_per_s;
  // A failed node is tried again after two deadlines: long enough that the claims meanwhile
  // recompute at once, short enough to notice it back (or its replica promoted) soon.
  t.unhealthy_hold = 2 * o.io_timeout;
  return t;
}

// One thread with its own RemoteClient, running jobs in order; a snapshot of the client's
// counters after each job, for the metrics (read on the Executor's thread). With
// poll_evictions, it also reads the cluster's eviction count (INFO stats of every master) when
// it has been idle for kEvictionPoll and the count is older than that.
class Worker {
 public:
  // A job's work on the worker; what it returns runs on the Executor's thread once the counters'
  // snapshot includes the job (so a reply never runs ahead of the metrics it changed).
  using Task = Executor::Task;
  using Job = std::function<Task(remote::RemoteClient&)>;
  struct Snapshot {
    remote::RemoteStats stats;
    std::vector<remote::NodeStats> nodes;
    std::optional<uint64_t> evicted_keys;  // the cluster's evictions (allkeys-lru), when read
  };
  static constexpr std::chrono::seconds kEvictionPoll{1};

  Worker(Executor& executor, remote::RemoteConfig config, bool poll_evictions)
      : executor_(executor), client_(std::move(config)), poll_evictions_(poll_evictions) {
    thread_ = std::thread([this] { run(); });
  }
  ~Worker() {  // jobs still queued are dropped: their callbacks never run
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void run_job(Job job) {
    {
      std::lock_guard lock(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_all();
  }
  Snapshot snapshot() const {
    std::lock_guard lock(mu_);
    return snapshot_;
  }

 private:
  void run() {
    bool connected = false;
    std::optional<uint64_t> evicted;
    Clock::time_point polled{};
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mu_);
        const bool woken =
            cv_.wait_for(lock, kEvictionPoll, [&] { return stop_ || !jobs_.empty(); });
        if (stop_) return;
        if (woken) {
          job = std::move(jobs_.front());
          jobs_.pop_front();
        }
      }
      const bool poll = !job && poll_evictions_ && Clock::now() - polled >= kEvictionPoll;
      if (!job && !poll) continue;
      // The slot map is asked for lazily; a call refreshes it again after a failure.
      if (!connected) connected = client_.connect().is_ok();
      Task then;
      if (job) {
        then = job(client_);
      } else {
        polled = Clock::now();
        if (Result<uint64_t> n = client_.evicted_keys(); n.is_ok()) evicted = *n;
      }
      {
        std::lock_guard lock(mu_);
        snapshot_ = {client_.stats(), client_.node_stats(), evicted};
      }
      if (then) executor_.post(std::move(then));
    }
  }

  Executor& executor_;
  remote::RemoteClient client_;
  const bool poll_evictions_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  Snapshot snapshot_;
  std::thread thread_;
};

class ClusterTier final : public RemoteTier {
 public:
  ClusterTier(Executor& executor, const RemoteTierOptions& options)
      : executor_(executor),
        options_(options),
        publisher_(client_config(options), options.write_behind_bytes),
        ttr_(ttr_options(options)),
        probes_(executor, client_config(options), /*poll_evictions=*/false),
        fetches_(executor, client_config(options), /*poll_evictions=*/true) {
    publisher_.start();
  }

  bool admit(uint64_t bytes) override {
    if (bytes <= options_.max_value_bytes &&
        publisher_.stats().queued_bytes + bytes <= options_.write_behind_bytes) {
      return true;
    }
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }

  void publish(const Key& key, TokenRange tokens, uint64_t generation, Hash128 checksum,
               std::shared_ptr<const std::vector<unsigned char>> bytes) override {
    remote::RemoteIdentity id;
    id.key = key;
    id.tokens = tokens;
    id.generation = generation;
    id.payload_bytes = bytes->size();
    id.checksum = checksum;
    const std::span<const unsigned char> payload(*bytes);
    publisher_.publish(id, payload, std::move(bytes));
  }

  void probe(std::vector<Key> keys, ProbeDone done) override {
    probes_.run_job([this, keys = std::move(keys),
                     done = std::move(done)](remote::RemoteClient& client) mutable {
      std::vector<std::optional<Found>> found(keys.size());
      const Clock::time_point give_up = Clock::now() + kProbeBudget;
      for (size_t i = 0; i < keys.size() && Clock::now() < give_up; ++i) {
        remote::FetchResult r = client.probe(keys[i]);
        if (!r.hit()) break;
        found[i] = Found{r.identity.payload_bytes, r.identity.generation,
                         client.owner_of(remote::object_key(keys[i]))};
      }
      return
          [found = std::move(found), done = std::move(done)]() mutable { done(std::move(found)); };
    });
  }

  void fetch(const Key& key, const std::string& node, uint64_t payload_bytes, uint64_t generation,
             FetchDone done) override {
    const Duration own_wait = ttr_.own_wait(node);
    ttr_.started(node, payload_bytes);
    const Clock::time_point called = Clock::now();
    fetches_.run_job([this, key, node, payload_bytes, generation, own_wait, called,
                      done = std::move(done)](remote::RemoteClient& client) mutable {
      const Clock::time_point start = Clock::now();
      const Duration waited = std::chrono::duration_cast<Duration>(start - called);
      bool node_failed = false;
      Result<Fetched> out = fetch_now(client, key, payload_bytes, generation, &node_failed);
      const Duration took = std::chrono::duration_cast<Duration>(Clock::now() - start);
      return [this, node, payload_bytes, took, waited, own_wait, node_failed, out = std::move(out),
              done = std::move(done)]() mutable {
        // A failure of an unknown node ("": no probe named it) marks none. The wait is the
        // fetch's time in the pool's queue (behind this daemon's own fetches to any node).
        ttr_.finished(node, payload_bytes, took, out.is_ok(), node_failed && !node.empty(),
                      executor_.now(), waited, own_wait);
        done(std::move(out));
      };
    });
  }

  std::optional<Duration> ttr(const std::vector<Part>& parts) const override {
    std::vector<remote::RemoteTtrModel::Part> p;
    p.reserve(parts.size());
    for (const Part& part : parts) p.push_back({part.node, part.bytes});
    return ttr_.ttr(p, executor_.now());
  }

  Duration ttr_bound(uint64_t bytes) const override { return ttr_.ttr_bound(bytes); }

  bool flush_publishes(std::chrono::milliseconds timeout) override {
    return publisher_.flush(timeout);
  }

  void add_metrics(std::vector<Metric>& m) const override;

 private:
  // *node_failed: the node did not answer in time or broke the connection (not a miss of the
  // object itself).
  static Result<Fetched> fetch_now(remote::RemoteClient& client, const Key& key,
                                   uint64_t payload_bytes, uint64_t generation, bool* node_failed) {
    const std::string what = "remote fetch of " + key.to_string() + ": ";
    Result<AlignedBuffer> buffer = AlignedBuffer::allocate(std::max<uint64_t>(payload_bytes, 1));
    if (!buffer) return Status(buffer.status().code(), what + buffer.status().message());
    auto held = std::make_shared<AlignedBuffer>(std::move(buffer).value());
    std::span<unsigned char> dst(reinterpret_cast<unsigned char*>(held->data()), payload_bytes);
    remote::FetchResult r = client.fetch({key, generation, 0}, dst);
    *node_failed = r.outcome == remote::FetchOutcome::kUnavailable;
    if (!r.hit()) {
      return Status::not_found(what + "a miss (" +
                               std::string(remote::fetch_outcome_name(r.outcome)) +
                               (r.detail.empty() ? "" : ": " + r.detail) + ")");
    }
    if (r.identity.payload_bytes != payload_bytes) {
      return Status::not_found(what + "a miss (length: the cluster's object has " +
                               std::to_string(r.identity.payload_bytes) + " bytes, " +
                               std::to_string(payload_bytes) + " were expected)");
    }
    return Fetched{std::move(held), payload_bytes, r.identity.checksum, r.identity.tokens};
  }

  Executor& executor_;
  const RemoteTierOptions options_;
  remote::WriteBehindPublisher publisher_;
  std::atomic<uint64_t> dropped_{0};  // publishes admit() refused
  remote::RemoteTtrModel ttr_;        // the Executor's thread only
  Worker probes_;
  Worker fetches_;
};

void ClusterTier::add_metrics(std::vector<Metric>& m) const {
  auto add = [&](std::string name, std::string help, MetricType type, double value,
                 Labels labels = {}) {
    m.push_back(Metric{std::move(name), std::move(help), type, std::move(labels), value});
  };
  constexpr auto kC = MetricType::kCounter;
  constexpr auto kG = MetricType::kGauge;
  const remote::PublisherStats ps = publisher_.stats();
  add("remote_published_total", "Objects published to the cluster (write-behind)", kC,
      double(ps.published));
  add("remote_published_bytes_total", "Payload bytes published to the cluster", kC,
      double(ps.published_bytes));
  add("remote_publish_dropped_total",
      "Publishes dropped because remote.write_behind_bytes were queued (backpressure)", kC,
      double(ps.dropped_full + dropped_.load(std::memory_order_relaxed)));
  add("remote_publish_failed_total", "Publishes the cluster refused or did not answer in time", kC,
      double(ps.failed));
  add("remote_publish_queued_bytes", "Payload bytes queued for publishing", kG,
      double(ps.queued_bytes));
  const Worker::Snapshot probe = probes_.snapshot();
  const Worker::Snapshot fetch = fetches_.snapshot();
  for (size_t o = 0; o < static_cast<size_t>(remote::FetchOutcome::kCount); ++o) {
    const std::string outcome(remote::fetch_outcome_name(static_cast<remote::FetchOutcome>(o)));
    add("remote_probes_total", "Lookup probes of the cluster, by outcome", kC,
        double(probe.stats.probes[o]), {{"outcome", outcome}});
  }
  for (size_t o = 0; o < static_cast<size_t>(remote::FetchOutcome::kCount); ++o) {
    const std::string outcome(remote::fetch_outcome_name(static_cast<remote::FetchOutcome>(o)));
    add("remote_fetches_total", "Fetches from the cluster, by outcome (only hit is KV)", kC,
        double(fetch.stats.fetches[o]), {{"outcome", outcome}});
  }
  if (fetch.evicted_keys) {  // polled by the fetch thread: a probe never waits behind it
    add("remote_cluster_evicted_keys",
        "Objects the cluster's masters evicted (allkeys-lru: a full cluster, never an error)", kG,
        double(*fetch.evicted_keys));
  }
  add("remote_redirects_total", "MOVED and ASK replies followed", kC,
      double(probe.stats.moved + probe.stats.ask + fetch.stats.moved + fetch.stats.ask));
  add("remote_slot_refreshes_total", "Slot maps asked of the cluster", kC,
      double(probe.stats.slot_refreshes + fetch.stats.slot_refreshes));
  // Per node: the probe's and the fetch's client together.
  std::map<std::string, remote::NodeStats> nodes;
  for (const auto* snapshot : {&probe, &fetch}) {
    for (const remote::NodeStats& n : snapshot->nodes) {
      auto [it, fresh] = nodes.try_emplace(n.address, n);
      if (fresh) continue;
      remote::NodeStats& sum = it->second;
      sum.healthy = sum.healthy && n.healthy;
      sum.fetches += n.fetches;
      sum.fetch_bytes += n.fetch_bytes;
      sum.failures += n.failures;
      sum.fetch_seconds += n.fetch_seconds;
    }
  }
  for (const auto& [address, n] : nodes) {
    const Labels node = {{"node", address}};
    add("remote_node_healthy", "1 while the node's last call succeeded", kG, n.healthy ? 1 : 0,
        node);
    add("remote_node_fetches_total", "Fetches the node served", kC, double(n.fetches), node);
    add("remote_node_fetch_bytes_total", "Payload bytes fetched from the node", kC,
        double(n.fetch_bytes), node);
    add("remote_node_failures_total", "Calls to the node that failed or timed out", kC,
        double(n.failures), node);
    add("remote_node_rate_bytes_per_second",
        "Fetch rate from the node a remote claim's TTR assumes (measured, weighted to recent "
        "fetches; remote.node_rate_gib_s until one is measured)",
        kG, ttr_.rate(address), node);
    add("remote_node_bytes_in_flight", "Bytes of fetches from the node queued or running", kG,
        double(ttr_.in_flight(address)), node);
    add("remote_node_wait_seconds",
        "Wait before a fetch from the node a remote claim's TTR adds (measured beyond this "
        "daemon's own bytes ahead, weighted to recent fetches)",
        kG, to_seconds(ttr_.wait(address)), node);
    add("remote_node_held_unhealthy",
        "1 while remote claims on the node recompute at once (a call to it failed lately)", kG,
        ttr_.healthy(address, executor_.now()) ? 0 : 1, node);
  }
}

}  // namespace

Result<std::shared_ptr<RemoteTier>> RemoteTier::open(Executor& executor,
                                                     const RemoteTierOptions& options) {
  // The configuration is checked now (a bad seed fails the start); the cluster is not reached.
  TEMPOKV_RETURN_IF_ERROR(client_config(options).validate());
  return std::shared_ptr<RemoteTier>(std::make_shared<ClusterTier>(executor, options));
}

}  // namespace tempokv::service
