// MetricsHttpServer: the listen socket, accepting, and teardown. Connection I/O is in
// metrics_http_conn.cc.
#include "daemon/metrics_http.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "daemon/host_port.h"

namespace tempokv::service {
namespace {

constexpr int kListenBacklog = 128;
// How long accepting pauses when the process is out of descriptors; level-triggered readiness
// would otherwise spin the loop on a pending connection it cannot take.
constexpr auto kAcceptBackoff = std::chrono::milliseconds(100);

}  // namespace

MetricsHttpServer::MetricsHttpServer(RealExecutor& executor, Render render,
                                     MetricsHttpOptions options)
    : executor_(executor), render_(std::move(render)), options_(options) {}

Result<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::start(RealExecutor& executor,
                                                                    std::string_view address,
                                                                    Render render,
                                                                    MetricsHttpOptions options) {
  if (!render) return Status::invalid_argument("MetricsHttpServer: empty render function");
  std::unique_ptr<MetricsHttpServer> server(
      new MetricsHttpServer(executor, std::move(render), options));
  TEMPOKV_RETURN_IF_ERROR(server->listen_on(address));
  return server;
}

Status MetricsHttpServer::add_page(std::string path, Page page) {
  if (!path.starts_with('/') || path == "/metrics" || pages_.contains(path) || !page.render) {
    return Status::invalid_argument("MetricsHttpServer: cannot add page '" + path +
                                    "' (a new path starting with '/', with a render function)");
  }
  pages_.emplace(std::move(path), std::move(page));
  return Status::ok();
}

Status MetricsHttpServer::listen_on(std::string_view address) {
  Result<HostPort> hp = parse_host_port(address);
  if (!hp.is_ok()) return Status::invalid_argument("metrics address " + hp.status().message());
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port_text = std::to_string(hp->port);
  if (int rc = getaddrinfo(hp->host.c_str(), port_text.c_str(), &hints, &found); rc != 0) {
    return Status::invalid_argument("metrics address '" + std::string(address) +
                                    "': " + gai_strerror(rc));
  }
  Status last = Status::io_error("metrics address '" + std::string(address) + "' resolved to none");
  for (addrinfo* ai = found; ai != nullptr && listen_fd_ < 0; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = Status::from_errno(errno, "metrics socket");
      continue;
    }
    int one = 1;
    // Without it a restarted daemon could not rebind while old connections sit in TIME_WAIT.
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, kListenBacklog) != 0) {
      last = Status::from_errno(errno, "binding metrics address " + std::string(address));
      close(fd);
      continue;
    }
    listen_fd_ = fd;
  }
  freeaddrinfo(found);
  if (listen_fd_ < 0) return last;

  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  if (getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
    return Status::from_errno(errno, "getsockname of the metrics socket");
  }
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return executor_.watch(listen_fd_, EPOLLIN, [this](uint32_t) { on_listen_ready(); });
}

MetricsHttpServer::~MetricsHttpServer() {
  resume_accept_.cancel();
  while (!conns_.empty()) close_connection(conns_.begin()->first);
  if (listen_fd_ >= 0) {
    // NotFound only when start() failed before the watch; nothing to undo then.
    [[maybe_unused]] Status st = executor_.unwatch(listen_fd_);
    close(listen_fd_);
  }
}

void MetricsHttpServer::on_listen_ready() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      if (conns_.size() >= options_.max_connections) {
        close(fd);  // the scraper retries; holding it would only grow the backlog
        continue;
      }
      add_connection(fd);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      [[maybe_unused]] Status st = executor_.modify(listen_fd_, 0);
      resume_accept_ = executor_.after(kAcceptBackoff, [this] {
        [[maybe_unused]] Status resumed = executor_.modify(listen_fd_, EPOLLIN);
      });
    }
    return;  // EAGAIN: the backlog is empty
  }
}

}  // namespace tempokv::service
