#include "daemon/metrics_http.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace tempokv::service {
namespace {

using std::chrono::milliseconds;

// A blocking client socket connected to 127.0.0.1:port, closed at scope exit. Reads time out
// after 5 s so a server bug fails the test instead of hanging it.
class Client {
 public:
  explicit Client(uint16_t port, int rcvbuf_bytes = 0) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (rcvbuf_bytes > 0)
      setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf_bytes, sizeof rcvbuf_bytes);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~Client() { close(fd_); }
  bool connected() const { return connected_; }
  bool send_all(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Everything until the server closes (or the read times out).
  std::string read_all() {
    std::string out;
    char buf[65536];
    for (;;) {
      ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

struct Response {
  std::string status_line;
  std::string headers;  // the header lines, each ending in \r\n
  std::string body;
};

Response split(const std::string& raw) {
  Response r;
  size_t line_end = raw.find("\r\n");
  size_t head_end = raw.find("\r\n\r\n");
  if (line_end == std::string::npos || head_end == std::string::npos) return r;
  r.status_line = raw.substr(0, line_end);
  r.headers = raw.substr(line_end + 2, head_end - line_end);
  r.body = raw.substr(head_end + 4);
  return r;
}

// A server on 127.0.0.1:0 with its executor running on a thread of its own.
class MetricsHttpTest : public ::testing::Test {
 protected:
  void start(MetricsHttpServer::Render render, MetricsHttpOptions options = {},
             std::vector<std::pair<std::string, MetricsHttpServer::Page>> pages = {}) {
    auto server = MetricsHttpServer::start(executor_, "127.0.0.1:0", std::move(render), options);
    ASSERT_TRUE(server.is_ok()) << server.status().to_string();
    server_ = std::move(server).value();
    for (auto& [path, page] : pages) {
      Status st = server_->add_page(path, std::move(page));
      ASSERT_TRUE(st.is_ok()) << st.to_string();
    }
    loop_ = std::thread([this] { executor_.run(); });
  }
  void TearDown() override {
    if (loop_.joinable()) {
      executor_.stop();
      loop_.join();
    }
    server_.reset();  // the loop is stopped: safe off the loop thread
  }
  // A value read on the loop thread, where the server's state lives.
  template <typename F>
  auto on_loop(F fn) {
    std::promise<decltype(fn())> p;
    auto f = p.get_future();
    executor_.post([&] { p.set_value(fn()); });
    return f.get();
  }
  // The server notices a client's close on a later loop turn than the client's close() returns.
  bool connections_drop_to_zero() {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (on_loop([&] { return server_->open_connections(); }) != 0) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(milliseconds(1));
    }
    return true;
  }
  std::string get(const std::string& request) {
    Client c(server_->port());
    EXPECT_TRUE(c.connected());
    EXPECT_TRUE(c.send_all(request));
    return c.read_all();
  }

  RealExecutor executor_;
  std::unique_ptr<MetricsHttpServer> server_;
  std::thread loop_;
};

const char* const kGetMetrics = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";

TEST_F(MetricsHttpTest, GetMetricsAnswersTheRenderedTextWithPrometheusHeaders) {
  std::atomic<std::thread::id> render_thread;
  start([&] {
    render_thread = std::this_thread::get_id();
    return std::string("# TYPE tempokv_up gauge\ntempokv_up 1\n");
  });
  EXPECT_NE(server_->port(), 0);
  Response r = split(get(kGetMetrics));
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_NE(r.headers.find("Content-Type: text/plain; version=0.0.4\r\n"), std::string::npos);
  EXPECT_NE(r.headers.find("Content-Length: 37\r\n"), std::string::npos);
  EXPECT_NE(r.headers.find("Connection: close\r\n"), std::string::npos);
  EXPECT_EQ(r.body, "# TYPE tempokv_up gauge\ntempokv_up 1\n");
  EXPECT_EQ(render_thread.load(), loop_.get_id());
}

TEST_F(MetricsHttpTest, QueryStringStillReachesMetrics) {
  start([] { return std::string("x 1\n"); });
  EXPECT_EQ(split(get("GET /metrics?name[]=x HTTP/1.0\r\n\r\n")).status_line, "HTTP/1.1 200 OK");
}

TEST_F(MetricsHttpTest, OtherPathsAre404) {
  start([] { return std::string("x 1\n"); });
  Response r = split(get("GET / HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(r.status_line, "HTTP/1.1 404 Not Found");
  EXPECT_NE(r.headers.find("Connection: close\r\n"), std::string::npos);
  EXPECT_EQ(split(get("GET /metricsx HTTP/1.1\r\n\r\n")).status_line, "HTTP/1.1 404 Not Found");
}

TEST_F(MetricsHttpTest, AnAddedPageAnswersItsPathWithItsContentTypeAndMetricsStillAnswers) {
  start([] { return std::string("x 1\n"); }, {},
        {{"/claims", {"application/json", [] { return std::string("{\"claims\":[]}\n"); }}}});
  Response r = split(get("GET /claims?x=1 HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_NE(r.headers.find("Content-Type: application/json\r\n"), std::string::npos);
  EXPECT_EQ(r.body, "{\"claims\":[]}\n");
  EXPECT_EQ(split(get(kGetMetrics)).body, "x 1\n");
  EXPECT_EQ(split(get("GET /claimsx HTTP/1.1\r\n\r\n")).status_line, "HTTP/1.1 404 Not Found");
}

TEST_F(MetricsHttpTest, APageCannotReplaceMetricsOrAnotherPageOrLackARender) {
  MetricsHttpServer::Page page{"application/json", [] { return std::string("{}"); }};
  start([] { return std::string("x 1\n"); }, {}, {{"/claims", page}});
  // Refused calls change nothing, so making them while the loop runs is safe.
  EXPECT_EQ(server_->add_page("/claims", page).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(server_->add_page("/metrics", page).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(server_->add_page("claims", page).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(server_->add_page("/other", {"application/json", nullptr}).code(),
            StatusCode::kInvalidArgument);
}

TEST_F(MetricsHttpTest, OtherMethodsAre405WithAllow) {
  start([] { return std::string("x 1\n"); });
  Response r = split(get("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_EQ(r.status_line, "HTTP/1.1 405 Method Not Allowed");
  EXPECT_NE(r.headers.find("Allow: GET, HEAD\r\n"), std::string::npos);
}

TEST_F(MetricsHttpTest, HeadGetsTheHeadersOfGetWithoutTheBody) {
  start([] { return std::string("x 1\n"); });
  Response r = split(get("HEAD /metrics HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_NE(r.headers.find("Content-Length: 4\r\n"), std::string::npos) << r.headers;
  EXPECT_EQ(r.body, "");
}

TEST_F(MetricsHttpTest, MalformedRequestLineIs400) {
  start([] { return std::string("x 1\n"); });
  EXPECT_EQ(split(get("GET\r\n\r\n")).status_line, "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(split(get("GET /metrics\r\n\r\n")).status_line, "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(split(get("GET  /metrics HTTP/1.1\r\n\r\n")).status_line, "HTTP/1.1 400 Bad Request");
}

TEST_F(MetricsHttpTest, OversizedRequestIs431AndTheConnectionCloses) {
  start([] { return std::string("x 1\n"); });
  std::string big = "GET /metrics HTTP/1.1\r\nX-Pad: " + std::string(9000, 'a');  // no end
  Response r = split(get(big));
  EXPECT_EQ(r.status_line, "HTTP/1.1 431 Request Header Fields Too Large");
  EXPECT_NE(r.headers.find("Connection: close\r\n"), std::string::npos);
  EXPECT_TRUE(connections_drop_to_zero());
}

TEST_F(MetricsHttpTest, RequestArrivingByteByByteIsAnswered) {
  start([] { return std::string("x 1\n"); });
  Client c(server_->port());
  ASSERT_TRUE(c.connected());
  for (const char* p = kGetMetrics; *p != '\0'; ++p) {
    ASSERT_TRUE(c.send_all(std::string_view(p, 1)));
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  EXPECT_EQ(split(c.read_all()).status_line, "HTTP/1.1 200 OK");
}

TEST_F(MetricsHttpTest, SeveralConcurrentClientsAreAllAnswered) {
  std::atomic<int> renders{0};
  start([&] { return "tempokv_scrapes " + std::to_string(++renders) + "\n"; });
  constexpr int kClients = 16, kEach = 5;
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&] {
      for (int j = 0; j < kEach; ++j) {
        Client c(server_->port());
        if (!c.connected() || !c.send_all(kGetMetrics)) continue;
        Response r = split(c.read_all());
        if (r.status_line == "HTTP/1.1 200 OK" && r.body.starts_with("tempokv_scrapes ")) ++ok;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), kClients * kEach);
  EXPECT_EQ(renders.load(), kClients * kEach);
  EXPECT_EQ(on_loop([&] { return server_->requests_served(); }), uint64_t{kClients * kEach});
}

TEST_F(MetricsHttpTest, LargeBodyIsSentWhole) {
  // 8 MiB into a client with a small receive buffer that waits before reading: the server's
  // sends fill the socket and it must continue on EPOLLOUT.
  std::string body(8 << 20, 'm');
  for (size_t i = 0; i < body.size(); i += 4096) body[i] = static_cast<char>('a' + (i / 4096) % 26);
  start([&] { return body; });
  Client c(server_->port(), 4096);
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.send_all(kGetMetrics));
  std::this_thread::sleep_for(milliseconds(50));
  Response r = split(c.read_all());
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_EQ(r.body.size(), body.size());
  EXPECT_TRUE(r.body == body);
}

TEST_F(MetricsHttpTest, ClientLeavingMidResponseDoesNotDisturbTheNext) {
  start([] { return std::string(8 << 20, 'm'); });
  {
    Client c(server_->port(), 4096);
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.send_all(kGetMetrics));
    char buf[1024];
    ASSERT_GT(recv(c.fd(), buf, sizeof buf, 0), 0);
  }  // closed with most of the body unread
  Response r = split(get(kGetMetrics));
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_EQ(r.body.size(), size_t{8 << 20});
}

TEST_F(MetricsHttpTest, SilentClientIsClosedAfterTheRequestTimeout) {
  MetricsHttpOptions options;
  options.request_timeout = milliseconds(100);
  start([] { return std::string("x 1\n"); }, options);
  Client c(server_->port());
  ASSERT_TRUE(c.connected());
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(c.read_all(), "");  // EOF from the server, well before the 5 s read timeout
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
  EXPECT_EQ(on_loop([&] { return server_->open_connections(); }), 0u);
}

TEST(MetricsHttpServer, BadAddressesAreInvalidArgument) {
  RealExecutor ex;
  auto render = [] { return std::string(); };
  for (const char* address : {"nonsense", "127.0.0.1:99999", ":9464", "127.0.0.1:"}) {
    auto server = MetricsHttpServer::start(ex, address, render);
    EXPECT_EQ(server.status().code(), StatusCode::kInvalidArgument) << address;
  }
  EXPECT_EQ(ex.watched(), 0u);
}

TEST(MetricsHttpServer, PortInUseIsAnError) {
  RealExecutor ex;
  auto render = [] { return std::string(); };
  auto first = MetricsHttpServer::start(ex, "127.0.0.1:0", render);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  auto second =
      MetricsHttpServer::start(ex, "127.0.0.1:" + std::to_string((*first)->port()), render);
  EXPECT_FALSE(second.is_ok());
  EXPECT_NE(second.status().message().find("binding metrics address"), std::string::npos);
  EXPECT_EQ(ex.watched(), 1u);
}

TEST(MetricsHttpServer, LocalhostAndIpv6LoopbackBind) {
  RealExecutor ex;
  auto render = [] { return std::string(); };
  auto v4 = MetricsHttpServer::start(ex, "localhost:0", render);
  ASSERT_TRUE(v4.is_ok()) << v4.status().to_string();
  EXPECT_NE((*v4)->port(), 0);
  auto v6 = MetricsHttpServer::start(ex, "[::1]:0", render);
  if (!v6.is_ok()) GTEST_SKIP() << "no IPv6 loopback here: " << v6.status().to_string();
  EXPECT_NE((*v6)->port(), 0);
}

}  // namespace
}  // namespace tempokv::service
