// Server: tempokvd's transport (docs/protocol.md). A ZeroMQ ROUTER socket on the daemon's
// RealExecutor: it reads each client message, decodes it, keeps the session rules (hello first,
// the negotiated version, strictly increasing ids, heartbeats) and hands requests of open
// sessions to the ServiceCore, whose replies and notifications it sends back to the client.
//
// A session ends on bye, on a disconnect (the ROUTER's monitor reports the connection's
// descriptor closed; each session remembers the descriptor its messages came on) or when it sent
// nothing for heartbeat_timeout. Every bad message gets an error reply; nothing a client sends
// stops the server or affects another session.
//
// Fairness: at most kBatch messages are handled per turn of the loop, then the rest wait behind
// the loop's other work.
//
// Ownership: owns the ZeroMQ context and sockets; borrows the executor and the core (set with
// attach()), which must outlive it. Threading: the executor's thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "executor/real_executor.h"
#include "service/latency_sketch.h"
#include "service/protocol.h"

namespace tempokv::service {

class ServiceCore;

struct ServerOptions {
  std::string endpoint;  // ipc://PATH or tcp://HOST:PORT
  Duration heartbeat_timeout = std::chrono::seconds(10);
  uint32_t max_sessions = 1024;
};

struct ServerStats {
  uint64_t messages = 0;
  uint64_t bad_messages = 0;      // undecodable or against the session rules
  uint64_t sessions_timed_out = 0;
  uint64_t sessions_disconnected = 0;
  uint64_t sessions_refused = 0;  // over max_sessions
  uint64_t replies = 0;
};

class Server {
 public:
  static Result<std::unique_ptr<Server>> start(RealExecutor& executor,
                                               const ServerOptions& options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Starts handing requests to core (nothing is read before).
  void attach(ServiceCore& core);
  // Sends a message to a session's client (dropped when the session is gone).
  void send(uint64_t session, const std::vector<std::byte>& message);
  // Stops reading and ends nothing: the core's shutdown does that.
  void stop_reading();

  // The endpoint bound (a tcp port 0 resolved).
  const std::string& endpoint() const { return endpoint_; }
  ServerStats stats() const { return stats_; }
  size_t sessions() const { return by_identity_.size(); }
  // The q-quantile (0..1) of the reply latency (receipt of a request to its reply leaving), in
  // seconds, over the last 64-128k immediate replies, within 1% (LatencySketch); 0 before any.
  double latency_quantile(double q) const;
  // Every reply's latency summed, and how many (the summary's _sum and _count).
  double latency_sum_seconds() const { return latency_sum_s_; }
  uint64_t latency_count() const { return latency_count_; }

 private:
  struct Peer {
    uint64_t session = 0;
    std::string identity;
    bool open = false;  // hello accepted
    uint32_t version = 0;
    uint64_t last_id = 0;
    TimePoint last_seen{};
    int fd = -1;
  };
  static constexpr int kBatch = 256;

  Server(RealExecutor& executor, const ServerOptions& options)
      : executor_(executor), options_(options) {}
  void drain();
  void post_drain();
  void drain_monitor();
  void on_message(std::string identity, const std::vector<std::byte>& payload, int fd);
  void on_request(Peer& peer, const Request& request);
  void reply_error(const std::string& identity, std::optional<uint64_t> id, const Status& st);
  void send_raw(const std::string& identity, const std::vector<std::byte>& message);
  void end_peer(const std::string& identity);
  void sweep();

  RealExecutor& executor_;
  ServerOptions options_;
  ServiceCore* core_ = nullptr;
  void* context_ = nullptr;
  void* router_ = nullptr;
  void* monitor_ = nullptr;
  int router_fd_ = -1;
  int monitor_fd_ = -1;
  std::string endpoint_;
  bool reading_ = true;
  bool drain_posted_ = false;
  uint64_t next_session_ = 1;
  std::unordered_map<std::string, Peer> by_identity_;
  std::unordered_map<uint64_t, std::string> by_session_;
  // The request being handled, so its reply's latency can be measured.
  TimePoint handling_since_{};
  bool handling_ = false;
  LatencySketch latency_;
  double latency_sum_s_ = 0;
  uint64_t latency_count_ = 0;
  ServerStats stats_;
  TimerHandle sweep_timer_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace tempokv::service
