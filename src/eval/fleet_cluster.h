// FleetCluster: the local Redis Cluster of `tempokv eval --mode real --scenario fleet`, driven
// through scripts/cluster (docs/cluster.md): up, flushed between runs so each policy starts from
// an empty cluster, one master killed with SIGKILL for the killed-master variant, and down.
//
// Ownership: owns the cluster's processes and directory (down() or the destructor removes them).
// Threading: any one thread; each call blocks on the script or redis-cli it runs.
#pragma once

#include <string>
#include <vector>

#include "tempokv/status.h"

namespace tempokv {

class FleetCluster {
 public:
  // script: scripts/cluster; dir: where its nodes keep their files; base_port: the first node's.
  FleetCluster(std::string script, std::string dir, int base_port, int nodes = 6)
      : script_(std::move(script)), dir_(std::move(dir)), base_port_(base_port), nodes_(nodes) {}
  ~FleetCluster();
  FleetCluster(const FleetCluster&) = delete;
  FleetCluster& operator=(const FleetCluster&) = delete;

  // FailedPrecondition with the install hint when redis-server or redis-cli is missing;
  // Internal naming the command when the script fails.
  Status up(const std::string& maxmemory = "256mb");
  Status down();
  // FLUSHALL on every master; the nodes keep running.
  Status flush();
  // The node's address ("127.0.0.1:port") for tempokvd's remote.seeds.
  std::vector<std::string> seeds() const;
  // Ports of the nodes that answer ROLE with master now.
  Result<std::vector<int>> masters() const;
  // SIGKILL of the node on `port` (its pid from the script's pid file).
  Status kill_node(int port) const;
  // Waits until every master's slots are served again (cluster_state:ok on a live node) or
  // `timeout_s`; Unavailable past it.
  Status wait_ok(double timeout_s) const;
  bool running() const { return running_; }

 private:
  std::string script_, dir_;
  int base_port_ = 0, nodes_ = 6;
  bool running_ = false;
};

// A base port for this process's cluster (bus ports +10000 stay below 32768, away from the
// test suites' ranges 12000-17999).
int fleet_cluster_port();

}  // namespace tempokv
