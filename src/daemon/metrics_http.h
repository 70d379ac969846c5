// MetricsHttpServer: the smallest HTTP/1.1 server that lets Prometheus scrape tempokvd.
// `GET /metrics` answers 200 with render()'s text (Content-Type text/plain; version=0.0.4), and
// each extra Page added before the loop runs answers its own path (tempokvd's `/claims`, JSON);
// other paths 404, other methods 405, a malformed request line 400, a request head above
// max_request_bytes 431. Every answer carries Connection: close and the connection ends after it.
//
// It lives on a RealExecutor: the listen socket and every connection are non-blocking fds
// watched by the loop, so render() runs on the loop thread beside the state it reads, and a slow
// or silent client blocks nothing. A client has request_timeout from accept to send its request
// head; a response stalled for idle_timeout is dropped.
//
// Ownership: the server owns its sockets and closes them in its destructor. Thread safety: create,
// use and destroy it on the executor's loop thread, or while the loop is not running.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "executor/real_executor.h"
#include "tempokv/status.h"

namespace tempokv::service {

struct MetricsHttpOptions {
  Duration request_timeout = std::chrono::seconds(5);  // from accept to a complete request head
  Duration idle_timeout = std::chrono::seconds(5);     // longest stall while sending the response
  size_t max_request_bytes = 8192;                     // request line plus headers
  size_t max_connections = 64;  // beyond it a new connection is closed at once
};

class MetricsHttpServer {
 public:
  using Render = std::function<std::string()>;
  struct Page {
    std::string content_type;
    Render render;
  };

  // Binds "host:port" (port 0: any free port; "[::1]:p" for IPv6) with SO_REUSEADDR and starts
  // accepting. InvalidArgument for a malformed address, the bind/listen errno otherwise.
  static Result<std::unique_ptr<MetricsHttpServer>> start(RealExecutor& executor,
                                                          std::string_view address, Render render,
                                                          MetricsHttpOptions options = {});
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // Serves `path` ("/name") beside /metrics. InvalidArgument for a path not starting with '/',
  // /metrics itself, a path already served or an empty render.
  Status add_page(std::string path, Page page);

  uint16_t port() const { return port_; }  // the bound port, also when 0 was asked for
  size_t open_connections() const { return conns_.size(); }
  uint64_t requests_served() const { return requests_served_; }  // responses sent, any status

 private:
  struct Connection {
    enum class Phase { kReading, kWriting, kDraining };
    int fd = -1;
    uint64_t serial = 0;  // tells a stale timer from a later connection reusing the fd number
    Phase phase = Phase::kReading;
    std::string request;  // the request head read so far
    std::string response;
    size_t sent = 0;  // bytes of response written
    TimerHandle timer;
  };

  MetricsHttpServer(RealExecutor& executor, Render render, MetricsHttpOptions options);
  Status listen_on(std::string_view address);
  void on_listen_ready();
  // Connection I/O (metrics_http_conn.cc).
  void add_connection(int fd);
  void on_connection_ready(int fd, uint32_t revents);
  void read_request(Connection& c);
  void respond(Connection& c, std::string response);
  void write_response(Connection& c);
  void drain(Connection& c);
  void arm_timer(Connection& c, Duration timeout);
  void close_connection(int fd);
  std::string answer(std::string_view head);

  RealExecutor& executor_;
  Render render_;
  std::unordered_map<std::string, Page> pages_;  // the extra paths
  MetricsHttpOptions options_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  uint64_t next_serial_ = 0;
  uint64_t requests_served_ = 0;
  TimerHandle resume_accept_;  // pending when accept() ran out of descriptors
  std::unordered_map<int, std::unique_ptr<Connection>> conns_;  // by fd
};

}  // namespace tempokv::service
