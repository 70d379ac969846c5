#include "service_hostile.h"

#include "json_text.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/percentile.h"
#include "daemon/accept_guard.h"
#include "daemon/daemon.h"
#include "daemon/daemon_config.h"
#include "daemon/spawned_daemon.h"
#include "service_attacks.h"
#include "tempokv/client.h"

namespace tempokv::cli {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double stat(const service::StatList& s, const std::string& name) {
  for (const auto& [n, v] : s)
    if (n == name) return v;
  return 0;
}

// The daemon's anonymous resident memory (/proc/PID/status RssAnon): what a peer could make it
// hold. The shared tier and write region are file pages and count elsewhere.
uint64_t rss_anon_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stoull(line.substr(8)) * 1024;
  }
  return 0;
}

// The daemon's configuration for the run: small quotas, so every attack meets its limit within
// seconds, and a short hello timeout.
struct Setup {
  service::DaemonConfig config;
  std::vector<std::string> args;
  std::string tokens_path;

  explicit Setup(const HostileOptions& o) {
    tokens_path = o.data_dir + ".tokens";
    service::DaemonConfig& c = config;
    c.data_dir = o.data_dir;
    c.server.metrics_address = "";
    c.server.heartbeat_timeout_ms = 6000;  // clients probe a silent daemon after 2 s
    c.server.hello_timeout_ms = 1000;
    c.server.max_sessions = 128;
    c.server.max_sessions_per_runtime = 8;
    c.server.max_queued_messages = 64;
    c.server.max_requests_per_runtime = 256;
    c.server.max_manifest_entries_per_runtime = 4 * c.server.max_manifest_entries;
    c.server.max_write_bytes_per_session = 32ULL << 20;
    c.server.tokens_file = tokens_path;
    c.tier.capacity_bytes = 256ULL << 20;
    c.tier.budget_bytes = 128ULL << 20;
    c.writes.region_bytes = 256ULL << 20;
    c.store.segment_bytes = 64ULL << 20;
    c.store.capacity_bytes = 1ULL << 30;
    c.store.max_object_bytes = 16ULL << 20;
    c.store.engine = "threads";
    auto set = [&](const std::string& field, const std::string& value) {
      args.insert(args.end(), {"--set", field + "=" + value});
    };
    set("server.heartbeat_timeout_ms", std::to_string(c.server.heartbeat_timeout_ms));
    set("server.hello_timeout_ms", std::to_string(c.server.hello_timeout_ms));
    set("server.max_sessions", std::to_string(c.server.max_sessions));
    set("server.max_sessions_per_runtime", std::to_string(c.server.max_sessions_per_runtime));
    set("server.max_queued_messages", std::to_string(c.server.max_queued_messages));
    set("server.max_requests_per_runtime", std::to_string(c.server.max_requests_per_runtime));
    set("server.max_manifest_entries_per_runtime",
        std::to_string(c.server.max_manifest_entries_per_runtime));
    set("server.max_write_bytes_per_session", std::to_string(c.server.max_write_bytes_per_session));
    set("server.tokens_file", tokens_path);
    set("tier.capacity_bytes", std::to_string(c.tier.capacity_bytes));
    set("tier.budget_bytes", std::to_string(c.tier.budget_bytes));
    set("writes.region_bytes", std::to_string(c.writes.region_bytes));
    set("store.segment_bytes", std::to_string(c.store.segment_bytes));
    set("store.capacity_bytes", std::to_string(c.store.capacity_bytes));
    set("store.max_object_bytes", std::to_string(c.store.max_object_bytes));
    set("store.engine", c.store.engine);
    args.insert(args.end(), o.daemon_args.begin(), o.daemon_args.end());
  }
};

// A well-behaved client: puts a few objects of its own, then stages claims of them and copies
// them out, over and over (at most one claim a millisecond, as a busy engine would); every call
// timed, every failure kept.
class GoodClient {
 public:
  GoodClient(uint32_t index, std::unique_ptr<ServiceClient> c) : index_(index), c_(std::move(c)) {}

  // Runs f, a call of the client, timing it.
  template <typename F>
  auto timed(F&& f) {
    const auto t0 = Clock::now();
    auto result = f();
    latencies_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    ++calls;
    return result;
  }

  void run(Clock::time_point deadline) {
    uint64_t next_id = uint64_t(index_ + 1) << 40;
    while (Clock::now() < deadline) {
      if (objects_.size() < 8) {
        put(objects_.size());
      } else {
        claim(next_id++);
        std::this_thread::sleep_for(milliseconds(1));
      }
    }
    check(timed([&] { return c_->bye(); }), "bye");
  }

  uint64_t calls = 0, failures = 0;
  std::vector<double> latencies_ms;
  std::vector<std::string> problems;

 private:
  bool check(const Status& st, const std::string& what) {
    if (st.is_ok()) return true;
    ++failures;
    if (problems.size() < 5) {
      problems.push_back("good client " + std::to_string(index_) + ": " + what + ": " +
                         st.to_string());
    }
    return false;
  }

  void put(size_t n) {
    const Key key{0x900d, (uint64_t(index_) << 32) | n};
    std::vector<std::byte> bytes(64 << 10, std::byte((index_ * 31 + n) & 0xff));
    if (check(timed([&] { return c_->put(key, TokenRange{0, 256}, bytes); }), "put")) {
      objects_.push_back({key, bytes.size()});
    }
  }

  void claim(uint64_t id) {
    std::vector<ManifestEntry> m(objects_.begin(), objects_.begin() + 1 + id % objects_.size());
    if (!check(timed([&] { return c_->add_request({id, 2048, 256, 64 << 10, 16}); }), "add")) {
      return;
    }
    bool ok =
        check(timed([&] { return c_->report_hit(id, m); }), "report_hit") &&
        check(timed([&] { return c_->update_order(std::vector<uint64_t>{id}); }), "update_order") &&
        check(timed([&] { return c_->admitted(id); }), "admitted");
    bool ready = false;
    Status outcome;
    if (ok) {
      auto answer = timed([&] {
        return c_->request_retrieval(id, [&](ClaimId, Result<RetrievalPath> p) {
          ready = true;
          outcome = p.status();
        });
      });
      ok = check(answer.status(), "request_retrieval");
      if (ok && *answer != RetrievalAnswer::kWait) ready = true;
    }
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (ok && !ready && Clock::now() < until) {
      c_->dispatch();
      if (!ready) std::this_thread::sleep_for(milliseconds(1));
    }
    if (ok && !ready) ok = check(Status::unavailable("not ready within 10 s"), "claim");
    if (ok) ok = check(outcome, "ready");
    if (ok) {
      ok = check(timed([&] { return c_->begin_transfer(id); }), "begin_transfer") &&
           check(timed([&] { return c_->end_transfer(id); }), "end_transfer");
    }
    if (!ok) {
      (void)c_->cancel(id);
      return;
    }
    check(timed([&] { return c_->finished(id, 16); }), "finished");
  }

  uint32_t index_;
  std::unique_ptr<ServiceClient> c_;
  std::vector<ManifestEntry> objects_;
};

std::unique_ptr<ServiceClient> connect_good(const std::string& endpoint, uint32_t index,
                                            Status* why) {
  ClientOptions o;
  o.endpoint = endpoint;
  o.name = "good-" + std::to_string(index);
  o.call_timeout = std::chrono::seconds(10);
  auto c = ServiceClient::connect(o);
  if (!c.is_ok()) {
    *why = c.status();
    return nullptr;
  }
  return std::move(c).value();
}

}  // namespace

Result<HostileReport> run_service_hostile(const HostileOptions& o) {
  if (o.tempokvd.empty()) return Status::invalid_argument("--hostile needs --tempokvd PATH");
  if (o.data_dir.empty()) return Status::invalid_argument("--hostile needs --data-dir DIR");
  if (o.good_clients == 0) return Status::invalid_argument("--clients must be >= 1");
  // This process holds the attacks' connections: its own soft limit up to its hard one.
  TEMPOKV_RETURN_IF_ERROR(service::raise_open_files_limit().status());
  HostileReport r;
  const Setup setup(o);
  std::error_code ec;
  std::filesystem::create_directories(o.data_dir, ec);
  if (ec) return Status::io_error("create " + o.data_dir + ": " + ec.message());
  {
    std::ofstream(setup.tokens_path) << "hostile-guarded s3cret\n";
    if (::chmod(setup.tokens_path.c_str(), 0600) != 0) {
      return Status::from_errno(errno, "chmod " + setup.tokens_path);
    }
  }
  TEMPOKV_ASSIGN_OR_RETURN(const uint64_t budget,
                           service::connection_budget(setup.config, o.max_open_files));
  service::SpawnOptions so;
  so.binary = o.tempokvd;
  so.data_dir = o.data_dir;
  so.log_path = o.data_dir + "/tempokvd.log";
  so.max_open_files = o.max_open_files;
  so.extra_args = setup.args;
  TEMPOKV_ASSIGN_OR_RETURN(auto daemon, service::SpawnedDaemon::start(so));
  const std::string endpoint = daemon->endpoint();
  const auto t0 = Clock::now();

  // The good clients first (their sessions exist before the attacks), then a moment of their
  // work before the memory baseline.
  std::vector<std::unique_ptr<GoodClient>> good;
  for (uint32_t i = 0; i < o.good_clients; ++i) {
    Status why;
    auto c = connect_good(endpoint, i, &why);
    if (!c) return Status(why.code(), "good client " + std::to_string(i) + ": " + why.message());
    good.push_back(std::make_unique<GoodClient>(i, std::move(c)));
  }
  const Clock::time_point deadline = Clock::now() + milliseconds(500) + o.duration;
  std::vector<std::thread> threads;
  for (auto& g : good) threads.emplace_back([&g, deadline] { g->run(deadline); });
  std::this_thread::sleep_for(milliseconds(500));
  r.rss_start_bytes = rss_anon_bytes(daemon->pid());

  AttackTarget t;
  t.endpoint = endpoint;
  t.deadline = deadline;
  t.connection_budget = static_cast<uint32_t>(budget);
  t.hello_timeout = milliseconds(setup.config.server.hello_timeout_ms);
  t.guarded_runtime = "hostile-guarded";
  t.max_sessions_per_runtime = setup.config.server.max_sessions_per_runtime;
  t.max_requests_per_runtime = setup.config.server.max_requests_per_runtime;
  t.max_manifest_entries = setup.config.server.max_manifest_entries;
  t.max_manifest_entries_per_runtime = setup.config.server.max_manifest_entries_per_runtime;
  t.max_object_bytes = setup.config.store.max_object_bytes;
  t.seed = o.seed;
  using Attack = std::function<AttackResult(const AttackTarget&)>;
  const std::vector<Attack> attacks = {
      idle_connections, refused_hellos,      flood,           garbage,         write_hoarding,
      session_cycling,  duplicate_manifests, large_manifests, crowded_runtime, step_edits};
  std::vector<AttackResult> results(attacks.size());
  for (size_t i = 0; i < attacks.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = attacks[i](t); });
  }
  for (std::thread& th : threads) th.join();

  // The good clients' calls, while attacked.
  std::vector<double> latencies;
  for (auto& g : good) {
    r.good_calls += g->calls;
    r.good_failures += g->failures;
    latencies.insert(latencies.end(), g->latencies_ms.begin(), g->latencies_ms.end());
    r.problems.insert(r.problems.end(), g->problems.begin(), g->problems.end());
  }
  r.good_client_p99_ms = percentile(latencies, 0.99);
  r.good_client_max_ms =
      latencies.empty() ? 0 : *std::max_element(latencies.begin(), latencies.end());
  for (const AttackResult& a : results) {
    r.attacks[a.kind] = a.actions;
    for (const std::string& p : a.problems) r.problems.push_back(a.kind + ": " + p);
    if (a.actions == 0) r.problems.push_back(a.kind + ": the attack made no attempt");
  }

  // After the attacks: alive, answering, its memory back, and a clean stop.
  std::this_thread::sleep_for(milliseconds(300));  // disconnects and backlogs handled
  Status why;
  auto after = connect_good(endpoint, 999, &why);
  const bool answering = after != nullptr;
  if (!answering)
    r.problems.push_back("no client could connect after the attacks: " + why.to_string());
  if (after) {
    auto s = after->stats();
    if (s.is_ok()) {
      for (const char* name :
           {"connections_refused_total", "connections_idle_closed_total", "hellos_refused_total",
            "sessions_refused_total", "messages_dropped_total", "messages_discarded_total",
            "bad_messages_total", "request_errors_total"}) {
        r.defences[name] = stat(*s, name);
      }
    }
    (void)after->bye();
    after.reset();
  }
  r.rss_growth_bytes = int64_t(rss_anon_bytes(daemon->pid())) - int64_t(r.rss_start_bytes);
  Result<int> code = daemon->stop();
  r.daemon_alive = answering && code.is_ok() && *code == 0;
  if (!code.is_ok() || *code != 0) {
    r.problems.push_back(
        "tempokvd did not stop cleanly: " +
        (code.is_ok() ? "exit status " + std::to_string(*code) : code.status().to_string()));
  }
  if (r.good_calls == 0) r.problems.push_back("the good clients made no call");
  if (r.rss_growth_bytes > int64_t(o.max_rss_growth_bytes)) {
    r.problems.push_back("the daemon's anonymous memory grew by " +
                         std::to_string(r.rss_growth_bytes) + " bytes, above " +
                         std::to_string(o.max_rss_growth_bytes));
  }
  if (r.defences["connections_refused_total"] == 0) {
    r.problems.push_back("no connection was refused: the descriptor attack did not bite");
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::filesystem::remove(setup.tokens_path, ec);
  return r;
}

std::string hostile_report_json(const HostileReport& r) {
  std::ostringstream s;
  s << "{\"daemon_alive\": " << (r.daemon_alive ? "true" : "false")
    << ", \"good_client_p99_ms\": " << r.good_client_p99_ms
    << ", \"good_client_max_ms\": " << r.good_client_max_ms << ", \"good_calls\": " << r.good_calls
    << ", \"good_failures\": " << r.good_failures
    << ", \"rss_growth_bytes\": " << r.rss_growth_bytes
    << ", \"rss_start_bytes\": " << r.rss_start_bytes << ", \"attacks\": {";
  bool first = true;
  for (const auto& [kind, n] : r.attacks) {
    s << (first ? "" : ", ") << '"' << kind << "\": " << n;
    first = false;
  }
  s << "}, \"defences\": {";
  first = true;
  for (const auto& [name, v] : r.defences) {
    s << (first ? "" : ", ") << '"' << name << "\": " << v;
    first = false;
  }
  s << "}, \"seconds\": " << r.seconds << ", \"problems\": ";
  write_json_strings(s, r.problems);
  s << "}\n";
  return s.str();
}

std::string format_hostile_report(const HostileReport& r) {
  std::ostringstream s;
  s << "hostile: " << r.seconds << " s; daemon " << (r.daemon_alive ? "alive" : "NOT ALIVE")
    << "\n  good clients: " << r.good_calls << " calls, " << r.good_failures << " failed, p99 "
    << r.good_client_p99_ms << " ms, max " << r.good_client_max_ms << " ms\n"
    << "  daemon anonymous memory: " << r.rss_start_bytes << " B before the attacks, grew by "
    << r.rss_growth_bytes << " B\n  attacks:";
  for (const auto& [kind, n] : r.attacks) s << " " << kind << " " << n;
  s << "\n  refused by the daemon:";
  for (const auto& [name, v] : r.defences) s << " " << name << " " << v;
  s << "\n";
  for (const std::string& p : r.problems) s << "  PROBLEM: " << p << "\n";
  s << (r.problems.empty() ? "  OK\n" : "  FAILED\n");
  return s.str();
}

}  // namespace tempokv::cli
