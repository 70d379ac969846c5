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
// Queues and fairness: each turn of the loop reads what the ROUTER holds (a bounded batch) into
// one inbox per peer, undecoded, then serves the inboxes round-robin, one message per peer per
// round, at most kBatch messages per turn before the loop's other work. A peer whose inbox holds
// max_queued_messages (or kMaxQueuedBytes) has further messages refused undecoded
// (ResourceExhausted), so a flooding session costs bounded memory and delays another session by
// at most one message of its own per round. The inbox of a peer that disconnects, says bye or
// times out is discarded without being decoded. When a backlog of more than kTrimBytes has
// drained, freed heap is handed back to the system (malloc_trim), so memory returns after a flood.
// ZeroMQ itself drops a connection that sends a message over 2 * kMaxMessageBytes (the decoder
// answers one between kMaxMessageBytes and that with InvalidArgument).
//
// Connections: with max_connections the listener is guarded (accept_guard.h): a connection
// beyond it is refused at accept, so descriptors never run out (libzmq aborts the process when
// they do), and a connection that holds no session for hello_timeout (it never said hello, its
// hello was refused, or its session ended) is shut down, so idle connections cannot keep others
// out. A connection is identified by the descriptor its messages arrive on (ZMQ_SRCFD).
//
// Ownership: owns the ZeroMQ context and sockets; borrows the executor and the core (set with
// attach()), which must outlive it. Threading: the executor's thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/latency_sketch.h"
#include "executor/real_executor.h"
#include "tempokv/protocol.h"

namespace tempokv::service {

class ServiceCore;

struct ServerOptions {
  std::string endpoint;  // ipc://PATH or tcp://HOST:PORT
  Duration heartbeat_timeout = std::chrono::seconds(10);
  uint32_t max_sessions = 1024;
  uint32_t max_queued_messages = 1000;  // per peer (server.max_queued_messages)
  // Connections the listener keeps at once (AcceptGuard; 0: unguarded), with descriptors below
  // fd_limit; a connection that holds no session for hello_timeout is shut down.
  uint64_t max_connections = 0;
  uint64_t fd_limit = 0;
  Duration hello_timeout = std::chrono::seconds(10);
};

struct ServerStats {
  uint64_t messages = 0;
  uint64_t bad_messages = 0;      // undecodable or against the session rules
  uint64_t sessions_timed_out = 0;
  uint64_t sessions_disconnected = 0;
  uint64_t sessions_refused = 0;  // over max_sessions
  uint64_t hellos_refused = 0;    // no common version, a wrong token, a full runtime
  uint64_t replies = 0;
  uint64_t dropped_messages = 0;    // refused undecoded: the peer's inbox was full
  uint64_t discarded_messages = 0;  // a gone peer's backlog, never decoded
  uint64_t queued_messages = 0;     // waiting in inboxes now
  uint64_t queued_bytes = 0;
  uint64_t connections = 0;          // held now (0 when unguarded)
  uint64_t connections_refused = 0;  // closed at accept: over max_connections or descriptors
  uint64_t connections_idle_closed = 0;  // shut down after hello_timeout without a session
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
  ServerStats stats() const;
  size_t sessions() const { return by_identity_.size(); }
  // The q-quantile (0..1) of the reply latency (receipt of a request to its reply leaving), in
  // seconds, over the last 64-128k immediate replies, within 1% (LatencySketch); 0 before any.
  double latency_quantile(double q) const;
  // Every reply's latency summed, and how many (the summary's _sum and _count).
  double latency_sum_seconds() const { return latency_sum_s_; }
  uint64_t latency_count() const { return latency_count_; }

 private:
  struct Inbox {
    struct Message {
      std::vector<std::byte> payload;
      TimePoint received;
    };
    std::deque<Message> messages;
    uint64_t bytes = 0;
    int fd = -1;  // the connection the messages came on
  };
  // A peer whose hello was accepted: an open session. Peers that never said hello, or whose
  // hello was refused, have no entry.
  struct Peer {
    uint64_t session = 0;
    std::string identity;
    uint32_t version = 0;
    uint64_t last_id = 0;
    TimePoint last_seen{};
    int fd = -1;
  };
  static constexpr int kBatch = 256;        // messages served per turn of the loop
  static constexpr int kReadBatch = 4096;   // messages read into inboxes per turn
  static constexpr uint64_t kMaxQueuedBytes = 64ULL << 20;  // per peer
  static constexpr uint64_t kTrimBytes = 16ULL << 20;
  static constexpr int kReplyHwm = 10000;  // replies queued per peer

  Server(RealExecutor& executor, const ServerOptions& options)
      : executor_(executor), options_(options) {}
  void drain();
  void post_drain();
  void drain_monitor();
  // Reads up to kReadBatch messages into the inboxes (one-frame messages; others are refused).
  void read_messages();
  // Serves up to kBatch queued messages, one per peer per round.
  void serve_inboxes();
  // Drops a peer's backlog undecoded.
  void discard_inbox(const std::string& identity);
  void on_message(std::string identity, const std::vector<std::byte>& payload, int fd,
                  TimePoint received);
  // A hello from a peer without a session: opens one, or refuses it leaving nothing behind.
  void open_session(const std::string& identity, const Request& request, int fd);
  void on_request(Peer& peer, const Request& request);
  void reply_error(const std::string& identity, std::optional<uint64_t> id, const Status& st);
  void send_raw(const std::string& identity, const std::vector<std::byte>& message);
  void end_peer(const std::string& identity);
  void sweep();
  // Shuts down connections without a session for hello_timeout (guarded listeners only).
  void close_idle_connections();

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
  bool guarded_ = false;  // this server armed the AcceptGuard
  bool drain_posted_ = false;
  uint64_t next_session_ = 1;
  std::unordered_map<std::string, Peer> by_identity_;
  std::unordered_map<uint64_t, std::string> by_session_;
  std::unordered_map<std::string, Inbox> inboxes_;  // peers with messages waiting
  std::deque<std::string> ring_;                    // those peers, in serving order
  uint64_t backlog_peak_bytes_ = 0;                 // since the inboxes were last empty
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
