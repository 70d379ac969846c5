// MetricsHttpServer connections: read the request head, answer it, write the answer out (possibly
// over several EPOLLOUT rounds), then half-close and drain until the client closes.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "daemon/metrics_http.h"

namespace tempokv::service {
namespace {

constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4";
constexpr size_t kReadChunk = 4096;
// Bytes discarded per callback while draining, so one flooding client cannot hold the loop.
constexpr size_t kDrainPerCall = 64 * 1024;

std::string http_response(int code, std::string_view reason, std::string_view content_type,
                          std::string_view body, std::string_view extra_headers = {}) {
  std::string out = "HTTP/1.1 " + std::to_string(code) + " " + std::string(reason) + "\r\n";
  out += "Content-Type: " + std::string(content_type) + "\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  out += "Connection: close\r\n";
  out += extra_headers;
  out += "\r\n";
  out += body;
  return out;
}

std::string error_response(int code, std::string_view reason, std::string_view extra = {}) {
  return http_response(code, reason, "text/plain; charset=utf-8",
                       std::to_string(code) + " " + std::string(reason) + "\n", extra);
}

bool would_block() { return errno == EAGAIN || errno == EWOULDBLOCK; }

}  // namespace

void MetricsHttpServer::add_connection(int fd) {
  auto conn = std::make_unique<Connection>();
  conn->fd = fd;
  conn->serial = next_serial_++;
  Status st = executor_.watch(fd, EPOLLIN | EPOLLRDHUP,
                              [this, fd](uint32_t revents) { on_connection_ready(fd, revents); });
  if (!st.is_ok()) {
    close(fd);
    return;
  }
  Connection& c = *conn;
  conns_.emplace(fd, std::move(conn));
  arm_timer(c, options_.request_timeout);  // from accept, not reset by reads: no slow drip
}

void MetricsHttpServer::arm_timer(Connection& c, Duration timeout) {
  c.timer.cancel();
  c.timer = executor_.after(timeout, [this, fd = c.fd, serial = c.serial] {
    auto it = conns_.find(fd);
    if (it != conns_.end() && it->second->serial == serial) close_connection(fd);
  });
}

void MetricsHttpServer::close_connection(int fd) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  it->second->timer.cancel();
  [[maybe_unused]] Status st = executor_.unwatch(fd);
  close(fd);
  conns_.erase(it);
}

// Each handler may close the connection; none touches c after it did.
void MetricsHttpServer::on_connection_ready(int fd, uint32_t /*revents*/) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  Connection& c = *it->second;
  switch (c.phase) {
    case Connection::Phase::kReading:
      return read_request(c);
    case Connection::Phase::kWriting:
      return write_response(c);  // an error or hangup shows as a failed send
    case Connection::Phase::kDraining:
      return drain(c);
  }
}

void MetricsHttpServer::read_request(Connection& c) {
  char buf[kReadChunk];
  for (;;) {
    // Never buffer more than one byte past the limit: that byte is what proves it was exceeded.
    const size_t room = options_.max_request_bytes + 1 - c.request.size();
    ssize_t n = recv(c.fd, buf, std::min(room, sizeof buf), 0);
    if (n > 0) {
      const size_t from = c.request.size() >= 3 ? c.request.size() - 3 : 0;
      c.request.append(buf, static_cast<size_t>(n));
      const size_t end = c.request.find("\r\n\r\n", from);
      if (end != std::string::npos && end + 4 <= options_.max_request_bytes) {
        return respond(c, answer(std::string_view(c.request).substr(0, end)));
      }
      if (c.request.size() > options_.max_request_bytes) {
        return respond(c, error_response(431, "Request Header Fields Too Large"));
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && would_block()) return;
    return close_connection(c.fd);  // EOF before a whole request, or a socket error
  }
}

std::string MetricsHttpServer::answer(std::string_view head) {
  // Request line: METHOD SP TARGET SP HTTP-VERSION; headers are not needed for any answer.
  const std::string_view line = head.substr(0, head.find("\r\n"));
  const size_t s1 = line.find(' ');
  const size_t s2 = s1 == std::string_view::npos ? s1 : line.find(' ', s1 + 1);
  if (s1 == 0 || s2 == std::string_view::npos || s2 == s1 + 1 ||
      line.find(' ', s2 + 1) != std::string_view::npos ||
      !line.substr(s2 + 1).starts_with("HTTP/")) {
    return error_response(400, "Bad Request");
  }
  const std::string_view method = line.substr(0, s1);
  const std::string_view target = line.substr(s1 + 1, s2 - s1 - 1);
  // HEAD as well as GET: RFC 9110 requires both of a general-purpose server (curl -I sends it).
  if (method != "GET" && method != "HEAD") {
    return error_response(405, "Method Not Allowed", "Allow: GET, HEAD\r\n");
  }
  const std::string path(target.substr(0, target.find('?')));
  std::string response;
  if (path == "/metrics") {
    response = http_response(200, "OK", kMetricsContentType, render_());
  } else if (auto it = pages_.find(path); it != pages_.end()) {
    response = http_response(200, "OK", it->second.content_type, it->second.render());
  } else {
    return error_response(404, "Not Found");
  }
  if (method == "HEAD") response.resize(response.find("\r\n\r\n") + 4);  // headers only
  return response;
}

void MetricsHttpServer::respond(Connection& c, std::string response) {
  ++requests_served_;
  c.phase = Connection::Phase::kWriting;
  c.request = std::string();
  c.response = std::move(response);
  c.sent = 0;
  arm_timer(c, options_.idle_timeout);
  write_response(c);
}

void MetricsHttpServer::write_response(Connection& c) {
  bool progressed = false;
  while (c.sent < c.response.size()) {
    ssize_t n = send(c.fd, c.response.data() + c.sent, c.response.size() - c.sent, MSG_NOSIGNAL);
    if (n > 0) {
      c.sent += static_cast<size_t>(n);
      progressed = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && would_block()) {
      // Only EPOLLOUT now: unread request bytes must not keep a level-triggered EPOLLIN firing.
      if (executor_.modify(c.fd, EPOLLOUT).is_ok()) {
        if (progressed) arm_timer(c, options_.idle_timeout);
        return;
      }
    }
    return close_connection(c.fd);  // the client went away (EPIPE, ECONNRESET)
  }
  // Half-close and drain rather than close at once: closing with unread request bytes in the
  // receive buffer sends a reset, which can destroy the response before the client reads it.
  shutdown(c.fd, SHUT_WR);
  c.phase = Connection::Phase::kDraining;
  c.response = std::string();
  if (!executor_.modify(c.fd, EPOLLIN | EPOLLRDHUP).is_ok()) return close_connection(c.fd);
  arm_timer(c, options_.idle_timeout);
}

void MetricsHttpServer::drain(Connection& c) {
  char buf[kReadChunk];
  for (size_t drained = 0; drained < kDrainPerCall;) {
    ssize_t n = recv(c.fd, buf, sizeof buf, 0);
    if (n > 0) {
      drained += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && would_block()) return;
    return close_connection(c.fd);  // the client closed its side: done
  }
}

}  // namespace tempokv::service
