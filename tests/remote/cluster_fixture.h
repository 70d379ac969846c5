// One real Redis Cluster for remote_cluster_test, started with scripts/cluster on ports derived
// from the process id (so two runs on one machine do not collide) and torn down at exit.
#pragma once

#include <string>
#include <vector>

#include "remote/remote_client.h"

namespace tempokv::remote {

struct TestCluster {
  int base_port = 0;
  std::string dir;
  std::vector<std::string> seeds() const;
  RemoteConfig config() const;
  int pid_of(const std::string& address) const;    // the node's redis-server pid
  void restart(const std::string& address) const;  // scripts/cluster start-node
};

const TestCluster& cluster();

// Payload bytes from a seed, so every object is different.
std::vector<unsigned char> pattern(size_t bytes, uint64_t seed);

}  // namespace tempokv::remote
