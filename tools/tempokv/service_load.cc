#include "service_load.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "tempokv/client.h"

namespace tempokv::cli {
namespace {

using Clock = std::chrono::steady_clock;

double stat(const service::StatList& s, const std::string& name) {
  for (const auto& [n, v] : s)
    if (n == name) return v;
  return 0;
}

struct Tally {
  std::mutex mu;
  LoadReport r;
  std::vector<double> latencies_ms;
};

// One client's run: its requests move add -> hit -> order -> admit -> retrieval -> transfer ->
// finished, or get cancelled on the way.
class LoadClient {
 public:
  LoadClient(const LoadOptions& o, uint32_t index, std::unique_ptr<ServiceClient> c)
      : o_(o), index_(index), c_(std::move(c)), rng_(o.seed * 7919 + index) {}

  void run(Clock::time_point deadline, bool leader) {
    while (Clock::now() < deadline) step(leader);
    // Wind down: every open request ends.
    for (int i = 0; i < 2000 && !open_.empty(); ++i) {
      c_->dispatch();
      std::vector<uint64_t> ids;
      for (auto& [id, r] : open_) ids.push_back(id);
      for (uint64_t id : ids) advance(id, /*finish=*/true);
      if (!open_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!open_.empty()) problem("client " + std::to_string(index_) + " could not end its claims");
    check(c_->bye(), "bye");
  }

  // Between connecting and the start of the mix.
  void keep_alive() { (void)c_->heartbeat(); }

  void merge(Tally& t) {
    std::lock_guard lock(t.mu);
    t.r.calls += r_.calls;
    t.r.call_errors += r_.call_errors;
    t.r.refused += r_.refused;
    t.r.reported += r_.reported;
    t.r.completed += r_.completed;
    t.r.cancelled += r_.cancelled;
    t.r.failed += r_.failed;
    t.r.notifications += r_.notifications;
    t.r.duplicate_notifications += r_.duplicate_notifications;
    t.r.puts += r_.puts;
    t.r.problems.insert(t.r.problems.end(), r_.problems.begin(), r_.problems.end());
    t.latencies_ms.insert(t.latencies_ms.end(), lat_.begin(), lat_.end());
  }

 private:
  enum class Phase { kReported, kWaiting, kReady };
  struct Req {
    Phase phase = Phase::kReported;
    std::vector<ManifestEntry> manifest;
    uint32_t notified = 0;
  };

  template <typename F>
  auto timed(F&& f) {
    const auto t0 = Clock::now();
    auto result = f();
    lat_.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    ++r_.calls;
    return result;
  }
  void check(const Status& st, const char* what) {
    if (st.is_ok()) return;
    ++r_.call_errors;
    if (r_.problems.size() < 20) problem(std::string(what) + ": " + st.to_string());
  }
  void problem(std::string p) { r_.problems.push_back(std::move(p)); }
  uint32_t pick(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng_); }

  void step(bool leader) {
    c_->dispatch();
    const uint32_t dice = pick(100);
    if (dice < 3) {
      std::vector<Key> keys = {Key{7, pick(o_.objects)}, Key{7, pick(o_.objects)}};
      check(timed([&] { return c_->lookup(keys); }).status(), "lookup");
    } else if (dice < 5) {
      check(timed([&] { return c_->heartbeat(); }), "heartbeat");
    } else if (dice < 6 && leader) {
      check(timed([&] { return c_->stats(); }).status(), "stats");
    } else if (dice < 8) {
      put_new();
    } else if (open_.size() < o_.open_per_client && dice < 40) {
      start();
    } else if (!open_.empty()) {
      auto it = open_.begin();
      std::advance(it, pick(static_cast<uint32_t>(open_.size())));
      advance(it->first, false);
    }
  }

  void put_new() {
    std::vector<std::byte> bytes(16 << 10, std::byte(index_ & 0xff));
    const Key key{8, (uint64_t(index_) << 32) | next_put_++};
    Status st = timed([&] { return c_->put(key, TokenRange{0, 16}, bytes); });
    if (st.code() == StatusCode::kResourceExhausted) {
      ++r_.refused;
      return;
    }
    check(st, "put");
    if (st.is_ok()) ++r_.puts;
  }

  void start() {
    const uint64_t id = (uint64_t(index_ + 1) << 32) | next_id_++;
    Req q;
    const uint32_t n = 1 + pick(4);
    for (uint32_t i = 0; i < n; ++i) q.manifest.push_back({Key{7, pick(o_.objects)}, o_.object_bytes});
    std::sort(q.manifest.begin(), q.manifest.end(),
              [](const ManifestEntry& a, const ManifestEntry& b) { return a.key.hash < b.key.hash; });
    q.manifest.erase(std::unique(q.manifest.begin(), q.manifest.end(),
                                 [](const ManifestEntry& a, const ManifestEntry& b) {
                                   return a.key == b.key;
                                 }),
                     q.manifest.end());
    const uint64_t bytes = q.manifest.size() * o_.object_bytes;
    Status st = timed([&] {
      return c_->add_request({id, 4096, uint32_t(q.manifest.size() * 256), bytes, 32});
    });
    check(st, "add_request");
    if (!st.is_ok()) return;
    st = timed([&] { return c_->report_hit(id, q.manifest); });
    check(st, "report_hit");
    if (!st.is_ok()) {
      (void)c_->cancel(id);
      return;
    }
    ++r_.reported;
    open_.emplace(id, std::move(q));
    std::vector<uint64_t> waiting;
    for (auto& [rid, r] : open_)
      if (r.phase == Phase::kReported) waiting.push_back(rid);
    check(timed([&] { return c_->update_order(waiting); }), "update_order");
  }

  void advance(uint64_t id, bool finish) {
    Req& q = open_.at(id);
    if (!finish && pick(10) == 0) {  // a runtime giving up on a request
      check(timed([&] { return c_->cancel(id); }), "cancel");
      ++r_.cancelled;
      open_.erase(id);
      return;
    }
    if (q.phase == Phase::kReported) {
      check(timed([&] { return c_->admitted(id); }), "admitted");
      auto answer = timed([&] {
        return c_->request_retrieval(id, [this](ClaimId cid, Result<RetrievalPath> p) {
          on_ready(cid, std::move(p));
        });
      });
      if (!answer.is_ok()) {
        // A claim can fail at once (never here: every object is in the store).
        check(answer.status(), "request_retrieval");
        ++r_.failed;
        open_.erase(id);
        return;
      }
      q.phase = *answer == RetrievalAnswer::kWait ? Phase::kWaiting : Phase::kReady;
      return;
    }
    if (q.phase == Phase::kWaiting) {
      if (finish) {
        check(timed([&] { return c_->cancel(id); }), "cancel");
        ++r_.cancelled;
        open_.erase(id);
      }
      return;  // its notification comes through dispatch()
    }
    auto spans = c_->objects(id);
    check(spans.status(), "objects");
    check(timed([&] { return c_->begin_transfer(id); }), "begin_transfer");
    if (spans.is_ok() && c_->tier_data() != nullptr) {
      for (const service::TierSpan& s : *spans) {
        if (s.offset + s.bytes > c_->tier_bytes()) problem("span outside the tier");
      }
    }
    if (!q.manifest.empty() && pick(2) == 0) {
      check(timed([&] { return c_->object_transferred(id, q.manifest[0].key); }),
            "object_transferred");
    }
    check(timed([&] { return c_->end_transfer(id); }), "end_transfer");
    check(timed([&] { return c_->finished(id, 1); }), "finished");
    ++r_.completed;
    open_.erase(id);
  }

  void on_ready(uint64_t id, Result<RetrievalPath> p) {
    ++r_.notifications;
    auto it = open_.find(id);
    if (it == open_.end()) return;  // cancelled meanwhile: the daemon may still have told it
    if (++it->second.notified > 1) ++r_.duplicate_notifications;
    if (!p.is_ok()) {
      // Every object stays in the store, so a failed claim is a problem worth naming.
      check(p.status(), "ready notification");
      ++r_.failed;
      open_.erase(it);
      return;
    }
    it->second.phase = Phase::kReady;
  }

  const LoadOptions& o_;
  uint32_t index_;
  std::unique_ptr<ServiceClient> c_;
  std::mt19937_64 rng_;
  std::map<uint64_t, Req> open_;
  uint32_t next_id_ = 0;
  uint32_t next_put_ = 0;
  LoadReport r_;
  std::vector<double> lat_;
};

}  // namespace

Result<LoadReport> run_service_load(const LoadOptions& o) {
  if (o.clients == 0) return Status::invalid_argument("--clients must be >= 1");
  ClientOptions co;
  co.endpoint = o.endpoint;
  co.name = "load-setup";
  co.call_timeout = o.call_timeout;
  co.lookup_timeout = o.call_timeout;  // the load test measures replies, it does not fail fast
  TEMPOKV_ASSIGN_OR_RETURN(auto setup, ServiceClient::connect(co));
  std::vector<std::byte> bytes(o.object_bytes);
  for (uint32_t i = 0; i < o.objects; ++i) {
    std::fill(bytes.begin(), bytes.end(), std::byte(i));
    TEMPOKV_RETURN_IF_ERROR(setup->put(Key{7, i}, TokenRange{0, 256}, bytes));
  }
  TEMPOKV_ASSIGN_OR_RETURN(service::StatList before, setup->stats());

  // Each client connects on its own thread; all start the mix together, and those already
  // connected keep their sessions alive while the others connect.
  std::vector<std::unique_ptr<LoadClient>> clients(o.clients);
  std::atomic<uint32_t> connected{0};
  std::atomic<uint32_t> running{o.clients};
  std::atomic<bool> go{false};
  std::mutex connect_mu;
  Status connect_error;
  auto deadline = Clock::now();
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < o.clients; ++i) {
    threads.emplace_back([&, i] {
      ClientOptions c = co;
      c.name = "load-" + std::to_string(i);
      // Pairs (2k, 2k+1) with k a multiple of share_every are two ranks of one runtime; they
      // still run their own requests, so the runtime's queue holds both.
      const uint32_t pair = i / 2;
      if (o.share_every > 0 && pair % o.share_every == 0 && 2 * pair + 1 < o.clients) {
        c.runtime = "load-rt-" + std::to_string(i / 2);
      }
      Result<std::unique_ptr<ServiceClient>> client = ServiceClient::connect(c);
      if (client.is_ok()) {
        clients[i] = std::make_unique<LoadClient>(o, i, std::move(client).value());
      } else {
        std::lock_guard lock(connect_mu);
        connect_error = client.status();
      }
      ++connected;
      while (!go) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (clients[i]) clients[i]->keep_alive();
      }
      if (clients[i]) clients[i]->run(deadline, i == 0);
      --running;
    });
  }
  while (connected < o.clients) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (void)setup->heartbeat();
  }
  const auto t0 = Clock::now();
  deadline = t0 + o.duration;
  go = true;
  // The setup session stays alive through the run: it reads the accounting afterwards.
  while (running > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    (void)setup->heartbeat();
  }
  for (std::thread& t : threads) t.join();
  if (!connect_error.is_ok()) return connect_error;
  Tally tally;
  for (auto& c : clients) c->merge(tally);
  LoadReport r = std::move(tally.r);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<double>& lat = tally.latencies_ms;
  if (!lat.empty()) {
    std::sort(lat.begin(), lat.end());
    r.p50_ms = lat[lat.size() / 2];
    r.p99_ms = lat[std::min(lat.size() - 1, lat.size() * 99 / 100)];
    r.max_ms = lat.back();
  }
  // The daemon ends sessions as byes arrive; its accounting is read after they have.
  service::StatList after;
  for (int i = 0; i < 200; ++i) {
    TEMPOKV_ASSIGN_OR_RETURN(after, setup->stats());
    if (stat(after, "sessions") <= 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  r.daemon_reported =
      stat(after, "claims_reported_total") - stat(before, "claims_reported_total");
  for (const char* s : {"claims_planned", "claims_staging", "claims_stage_ready",
                        "claims_transferring", "claims_ordinary"})
    r.live_claims += stat(after, s);
  r.protected_bytes = stat(after, "tier_protected_bytes");
  r.reserved_bytes = stat(after, "tier_reserved_bytes");
  r.write_used_bytes = stat(after, "write_region_used_bytes");
  r.daemon_p50_ms = stat(after, "reply_latency_seconds_0.5") * 1e3;
  r.daemon_p99_ms = stat(after, "reply_latency_seconds_0.99") * 1e3;
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) r.problems.push_back(what);
  };
  expect(r.daemon_reported == double(r.reported),
         "daemon counted " + std::to_string(r.daemon_reported) + " claims, clients reported " +
             std::to_string(r.reported));
  expect(r.completed + r.cancelled + r.failed == r.reported, "claims reported != ended");
  expect(r.duplicate_notifications == 0, "duplicated ready notifications");
  expect(r.live_claims == 0, "live claims left: " + std::to_string(r.live_claims));
  expect(r.protected_bytes == 0 && r.reserved_bytes == 0, "protection left behind");
  expect(r.write_used_bytes == 0, "write region reservations left behind");
  expect(stat(after, "sessions") == 1, "sessions left: " + std::to_string(stat(after, "sessions")));
  expect(r.call_errors == 0, std::to_string(r.call_errors) + " unexpected call errors");
  (void)setup->bye();
  return r;
}

std::string format_load_report(const LoadReport& r) {
  std::ostringstream o;
  o << "calls " << r.calls << " in " << r.seconds << " s (" << uint64_t(double(r.calls) / r.seconds)
    << "/s); claims reported " << r.reported << " (daemon " << r.daemon_reported << "), completed "
    << r.completed << ", cancelled " << r.cancelled << ", failed " << r.failed
    << "; notifications " << r.notifications << "; puts " << r.puts << " (" << r.refused
    << " refused: write region full)\n"
    << "client round trip p50 " << r.p50_ms << " ms, p99 " << r.p99_ms << " ms, max " << r.max_ms
    << " ms; daemon reply latency p50 " << r.daemon_p50_ms << " ms, p99 " << r.daemon_p99_ms
    << " ms\n"
    << "after: live claims " << r.live_claims << ", protected " << r.protected_bytes
    << " B, reserved " << r.reserved_bytes << " B, write region " << r.write_used_bytes << " B\n";
  if (r.problems.empty()) {
    o << "checks: all held\n";
  } else {
    for (const std::string& p : r.problems) o << "PROBLEM: " << p << "\n";
  }
  return o.str();
}

}  // namespace tempokv::cli
