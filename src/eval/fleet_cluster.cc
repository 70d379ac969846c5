#include "eval/fleet_cluster.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace tempokv {
namespace {

// stdout of a shell command (empty when it fails to run).
std::string capture(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  ::pclose(p);
  return out;
}

std::string cli(int port, const std::string& args) {
  return "redis-cli -p " + std::to_string(port) + " " + args + " 2>/dev/null";
}

}  // namespace

int fleet_cluster_port() { return 18000 + static_cast<int>(::getpid() % 400) * 10; }

FleetCluster::~FleetCluster() { (void)down(); }

Status FleetCluster::up(const std::string& maxmemory) {
  if (std::system("command -v redis-server >/dev/null && command -v redis-cli >/dev/null") != 0) {
    return Status::failed_precondition(
        "fleet: redis-server/redis-cli not found: install Debian's redis-server and redis-tools "
        "(scripts/install-deps, or apt-get install redis-server redis-tools)");
  }
  const std::string cmd = script_ + " up --nodes " + std::to_string(nodes_) + " --port " +
                          std::to_string(base_port_) + " --dir " + dir_ + " --maxmemory " +
                          maxmemory + " >/dev/null";
  if (std::system(cmd.c_str()) != 0) return Status::internal("fleet: '" + cmd + "' failed");
  running_ = true;
  return Status::ok();
}

Status FleetCluster::down() {
  if (!running_) return Status::ok();
  running_ = false;
  const std::string cmd = script_ + " down --dir " + dir_;
  if (std::system(cmd.c_str()) != 0) return Status::internal("fleet: '" + cmd + "' failed");
  return Status::ok();
}

std::vector<std::string> FleetCluster::seeds() const {
  std::vector<std::string> s;
  for (int i = 0; i < nodes_; ++i) s.push_back("127.0.0.1:" + std::to_string(base_port_ + i));
  return s;
}

Result<std::vector<int>> FleetCluster::masters() const {
  std::vector<int> out;
  for (int i = 0; i < nodes_; ++i) {
    const int port = base_port_ + i;
    if (capture(cli(port, "role")).rfind("master", 0) == 0) out.push_back(port);
  }
  if (out.empty()) return Status::unavailable("fleet: no node of the cluster answers as master");
  return out;
}

Status FleetCluster::flush() {
  TEMPOKV_ASSIGN_OR_RETURN(std::vector<int> ports, masters());
  for (int port : ports) {
    if (capture(cli(port, "flushall")).rfind("OK", 0) != 0) {
      return Status::internal("fleet: FLUSHALL on 127.0.0.1:" + std::to_string(port) + " failed");
    }
  }
  return Status::ok();
}

Status FleetCluster::kill_node(int port) const {
  std::ifstream f(dir_ + "/" + std::to_string(port) + ".pid");
  int pid = 0;
  f >> pid;
  if (pid <= 0) return Status::not_found("fleet: no pid file for node " + std::to_string(port));
  if (::kill(pid, SIGKILL) != 0) {
    return Status::internal("fleet: kill -9 of node " + std::to_string(port) + " failed");
  }
  return Status::ok();
}

Status FleetCluster::wait_ok(double timeout_s) const {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < nodes_; ++i) {
      if (capture(cli(base_port_ + i, "cluster info")).find("cluster_state:ok") !=
          std::string::npos) {
        return Status::ok();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Status::unavailable("fleet: the cluster did not report cluster_state:ok in time");
}

}  // namespace tempokv
