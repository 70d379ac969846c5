#include "service_chaos.h"

#include "json_text.h"
#include "service_chaos_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "daemon/spawned_daemon.h"
#include "tempokv/client.h"

namespace tempokv::cli {
namespace {

using chaos::client_options;
using chaos::Clock;
using chaos::kModel;
using chaos::run_worker;
using chaos::stage_and_check;
using chaos::stat;
using std::chrono::milliseconds;

struct Child {
  pid_t pid = -1;
  int fd = -1;
  char phase = '-';  // the last step it reported: P(ut), T(ransfer), C(laim done), ...
  std::string partial;
};

class Chaos {
 public:
  explicit Chaos(const ChaosOptions& o) : o_(o), rng_(o.seed) {}

  Result<ChaosReport> run() {
    std::error_code ec;
    std::filesystem::create_directories(o_.data_dir, ec);
    so_.binary = o_.tempokvd;
    so_.data_dir = o_.data_dir;
    so_.log_path = o_.data_dir + "/tempokvd.log";
    so_.extra_args = {"--set", "tier.capacity_bytes=256MiB", "--set", "tier.budget_bytes=128MiB",
                      "--set", "writes.region_bytes=256MiB", "--set", "store.segment_bytes=64MiB",
                      "--set", "store.capacity_bytes=8GiB", "--set", "store.max_object_bytes=16MiB",
                      "--set", "server.heartbeat_timeout_ms=3000"};
    so_.extra_args.insert(so_.extra_args.end(), o_.daemon_args.begin(), o_.daemon_args.end());
    TEMPOKV_ASSIGN_OR_RETURN(daemon_, service::SpawnedDaemon::start(so_));
    endpoint_ = daemon_->endpoint();
    const auto t0 = Clock::now();
    deadline_ = t0 + o_.duration;
    for (uint32_t i = 0; i < o_.clients; ++i) spawn();
    // Kills spread over the run, away from its ends; the daemon's kill halfway.
    const uint32_t kills = std::max<uint32_t>(1, o_.clients / 2);
    std::vector<Clock::time_point> kill_at;
    for (uint32_t k = 0; k < kills; ++k) {
      kill_at.push_back(t0 + o_.duration * (k + 1) / (kills + 3));
    }
    const Clock::time_point restart_at = t0 + o_.duration * 2 / 3;
    size_t next_kill = 0;
    Clock::time_point kill_since{};
    while (!children_.empty() && Clock::now() < deadline_ + std::chrono::seconds(60)) {
      read_children(milliseconds(10));
      reap();
      const auto now = Clock::now();
      if (next_kill < kill_at.size() && now >= kill_at[next_kill] &&
          now < deadline_ - milliseconds(500)) {
        if (kill_since == Clock::time_point{}) kill_since = now;
        // Wait (up to 1 s) for a child caught mid-transfer (even kills) or mid-put (odd ones).
        const bool any = now - kill_since > std::chrono::seconds(1);
        if (kill_one(any ? '*' : next_kill % 2 == 0 ? 'T' : 'P')) {
          ++next_kill;
          kill_since = {};
        }
      }
      if (r_.daemon_restarts == 0 && now >= restart_at) TEMPOKV_RETURN_IF_ERROR(restart_daemon());
    }
    for (auto& [pid, c] : children_) {
      r_.problems.push_back("client process " + std::to_string(pid) + " did not finish");
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      close(c.fd);
    }
    children_.clear();
    TEMPOKV_RETURN_IF_ERROR(verify());
    r_.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    check();
    return r_;
  }

 private:
  void spawn() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      r_.problems.push_back("pipe: " + std::string(std::strerror(errno)));
      return;
    }
    // Keys and request ids of a worker start with the run's tag and the worker's number, so a
    // second run on the same data directory puts new keys.
    const uint64_t worker = (run_tag_ << 16) | ++workers_;
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      _exit(run_worker(endpoint_, worker, o_, deadline_, fds[1]));
    }
    close(fds[1]);
    if (pid < 0) {
      close(fds[0]);
      r_.problems.push_back("fork: " + std::string(std::strerror(errno)));
      return;
    }
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    children_[pid] = Child{pid, fds[0]};
  }

  void read_children(milliseconds wait) {
    std::vector<pollfd> fds;
    for (auto& [pid, c] : children_) fds.push_back({c.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), static_cast<int>(wait.count())) <= 0) return;
    for (auto& [pid, c] : children_) drain(c);
  }

  void drain(Child& c) {
    char buf[4096];
    for (ssize_t n; (n = read(c.fd, buf, sizeof(buf))) > 0;) {
      c.partial.append(buf, size_t(n));
      for (size_t nl; (nl = c.partial.find('\n')) != std::string::npos;) {
        on_line(c, c.partial.substr(0, nl));
        c.partial.erase(0, nl + 1);
      }
    }
  }

  void on_line(Child& c, const std::string& line) {
    if (line.empty()) return;
    switch (line[0]) {
      case 'A': {
        std::istringstream in(line.substr(2));
        uint64_t hash = 0, bytes = 0;
        in >> hash >> bytes;
        acked_[hash] = bytes;
        c.phase = 'A';
        break;
      }
      case 'V':
        ++r_.claims_verified;
        break;
      case 'M':
        ++r_.claims_verified;
        ++r_.mismatches;
        r_.problems.push_back(line.substr(2));
        break;
      case 'E':
        ++r_.client_errors;
        break;
      default:
        c.phase = line[0];
    }
  }

  // Reaps children that exited (their deadline passed); a failure exit is a problem.
  void reap() {
    for (auto it = children_.begin(); it != children_.end();) {
      int status = 0;
      if (waitpid(it->first, &status, WNOHANG) != it->first) {
        ++it;
        continue;
      }
      drain(it->second);
      close(it->second.fd);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        r_.problems.push_back("client process exited with status " + std::to_string(status));
      }
      it = children_.erase(it);
    }
  }

  // SIGKILLs a child whose last step was `phase` (any child for '*'), reads what it told before
  // dying and starts another in its place. False when none was caught.
  bool kill_one(char phase) {
    std::vector<pid_t> candidates;
    for (auto& [pid, c] : children_)
      if (phase == '*' || c.phase == phase) candidates.push_back(pid);
    if (candidates.empty()) return false;
    const pid_t pid = candidates[rng_() % candidates.size()];
    Child c = children_.at(pid);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    drain(c);  // acknowledgements it reported before it died count
    close(c.fd);
    children_.erase(pid);
    ++r_.clients_killed;
    if (c.phase == 'P') ++r_.killed_mid_put;
    if (c.phase == 'T') ++r_.killed_mid_transfer;
    spawn();
    return true;
  }

  Status restart_daemon() {
    kill(daemon_->pid(), SIGKILL);
    (void)daemon_->stop();  // reaps it
    daemon_.reset();
    ++r_.daemon_restarts;
    TEMPOKV_ASSIGN_OR_RETURN(daemon_, service::SpawnedDaemon::start(so_));
    return Status::ok();
  }

  // Reads every acknowledged put back through claims of up to 64 objects, then reads the
  // daemon's accounting once every session has gone.
  Status verify() {
    TEMPOKV_ASSIGN_OR_RETURN(auto c, ServiceClient::connect(client_options(endpoint_, "verify")));
    std::vector<ManifestEntry> batch;
    uint64_t id = 0xC4A0500000000000ULL;
    auto flush = [&] {
      if (batch.empty()) return;
      std::vector<Key> keys;
      for (const ManifestEntry& e : batch) keys.push_back(e.key);
      auto sizes = c->lookup(keys);
      std::vector<ManifestEntry> present;
      for (size_t i = 0; sizes.is_ok() && i < batch.size(); ++i) {
        if ((*sizes)[i] == batch[i].bytes) {
          present.push_back(batch[i]);
        } else {
          r_.problems.push_back("acknowledged put " + batch[i].key.to_string() + " reads back " +
                                std::to_string((*sizes)[i]) + " bytes");
        }
      }
      if (!sizes.is_ok()) r_.problems.push_back("lookup: " + sizes.status().to_string());
      if (!present.empty()) {
        Status st = stage_and_check(*c, ++id, present, o_.object_bytes, [] {});
        if (st.is_ok()) {
          r_.acked_puts_intact += present.size();
        } else {
          r_.problems.push_back("reading acknowledged puts back: " + st.to_string());
        }
      }
      batch.clear();
    };
    r_.acked_puts = acked_.size();
    for (const auto& [hash, bytes] : acked_) {
      batch.push_back({Key{kModel, hash}, bytes});
      if (batch.size() == 64) flush();
    }
    flush();
    service::StatList after;
    for (int i = 0; i < 500; ++i) {
      TEMPOKV_ASSIGN_OR_RETURN(after, c->stats());
      double live = 0;
      for (const char* s : {"claims_planned", "claims_staging", "claims_stage_ready",
                            "claims_transferring", "claims_ordinary"})
        live += stat(after, s);
      r_.live_claims_after = live;
      r_.protected_bytes_after = stat(after, "tier_protected_bytes");
      r_.reserved_bytes_after = stat(after, "tier_reserved_bytes");
      r_.write_region_bytes_after = stat(after, "write_region_used_bytes");
      if (stat(after, "sessions") <= 1 && live == 0 && r_.protected_bytes_after == 0 &&
          r_.reserved_bytes_after == 0 && r_.write_region_bytes_after == 0) {
        break;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    (void)c->bye();
    c.reset();
    Result<int> code = daemon_->stop();
    if (!code.is_ok() || *code != 0) {
      r_.problems.push_back("tempokvd did not stop cleanly: " +
                            (code.is_ok() ? std::to_string(*code) : code.status().to_string()));
    }
    return Status::ok();
  }

  void check() {
    auto need = [&](bool ok, const std::string& what) {
      if (!ok) r_.problems.push_back(what);
    };
    need(r_.acked_puts > 0, "no put was acknowledged");
    need(r_.acked_puts_intact == r_.acked_puts, "acknowledged puts not intact: " +
                                                    std::to_string(r_.acked_puts -
                                                                   r_.acked_puts_intact));
    need(r_.claims_verified > 0, "no client claim became ready");
    need(r_.mismatches == 0, "claims whose bytes differed: " + std::to_string(r_.mismatches));
    need(r_.live_claims_after == 0, "live claims after the run");
    need(r_.protected_bytes_after == 0, "protected bytes after the run");
    need(r_.reserved_bytes_after == 0, "reserved bytes after the run");
    need(r_.write_region_bytes_after == 0, "write-region bytes held after the run");
    need(r_.daemon_restarts == 1, "the daemon was not restarted");
    need(r_.clients_killed > 0, "no client was killed");
  }

  const ChaosOptions& o_;
  std::mt19937_64 rng_;
  service::SpawnOptions so_;
  std::unique_ptr<service::SpawnedDaemon> daemon_;
  std::string endpoint_;
  Clock::time_point deadline_;
  std::map<pid_t, Child> children_;
  uint32_t workers_ = 0;
  const uint64_t run_tag_ = std::random_device{}() & 0x7fff;
  std::map<uint64_t, uint64_t> acked_;  // key hash -> bytes, of acknowledged puts
  ChaosReport r_;
};

}  // namespace

Result<ChaosReport> run_service_chaos(const ChaosOptions& o) {
  if (o.tempokvd.empty()) return Status::invalid_argument("--chaos needs --tempokvd PATH");
  if (o.data_dir.empty()) return Status::invalid_argument("--chaos needs --data-dir DIR");
  if (o.clients == 0) return Status::invalid_argument("--clients must be >= 1");
  Chaos chaos(o);
  return chaos.run();
}

std::string chaos_report_json(const ChaosReport& r) {
  std::ostringstream s;
  s << "{\"acked_puts\": " << r.acked_puts << ", \"acked_puts_intact\": " << r.acked_puts_intact
    << ", \"claims_verified\": " << r.claims_verified << ", \"mismatches\": " << r.mismatches
    << ", \"live_claims_after\": " << r.live_claims_after
    << ", \"protected_bytes_after\": " << r.protected_bytes_after
    << ", \"reserved_bytes_after\": " << r.reserved_bytes_after
    << ", \"write_region_bytes_after\": " << r.write_region_bytes_after
    << ", \"daemon_restarts\": " << r.daemon_restarts
    << ", \"clients_killed\": " << r.clients_killed
    << ", \"killed_mid_put\": " << r.killed_mid_put
    << ", \"killed_mid_transfer\": " << r.killed_mid_transfer
    << ", \"client_errors\": " << r.client_errors << ", \"seconds\": " << r.seconds
    << ", \"problems\": ";
  write_json_strings(s, r.problems);
  s << "}\n";
  return s.str();
}

std::string format_chaos_report(const ChaosReport& r) {
  std::ostringstream s;
  s << "chaos: " << r.seconds << " s, " << r.clients_killed << " clients SIGKILLed ("
    << r.killed_mid_put << " mid-put, " << r.killed_mid_transfer << " mid-transfer), "
    << r.daemon_restarts << " daemon restart(s)\n"
    << "  acknowledged puts " << r.acked_puts << ", intact " << r.acked_puts_intact << "\n"
    << "  claims verified " << r.claims_verified << ", mismatches " << r.mismatches
    << ", client errors " << r.client_errors << " (around the restart)\n"
    << "  after: live claims " << r.live_claims_after << ", protected " << r.protected_bytes_after
    << " B, reserved " << r.reserved_bytes_after << " B, write region "
    << r.write_region_bytes_after << " B\n";
  for (const std::string& p : r.problems) s << "  PROBLEM: " << p << "\n";
  s << (r.problems.empty() ? "  OK\n" : "  FAILED\n");
  return s.str();
}

}  // namespace tempokv::cli
