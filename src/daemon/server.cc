#include "daemon/server.h"

#include <malloc.h>
#include <sys/epoll.h>
#include <zmq.h>

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "daemon/accept_guard.h"
#include "daemon/service_core.h"

namespace tempokv::service {
namespace {

Status zmq_error(const std::string& what) {
  return Status::io_error(what + ": " + zmq_strerror(zmq_errno()));
}

int socket_fd(void* socket) {
  int fd = -1;
  size_t len = sizeof(fd);
  zmq_getsockopt(socket, ZMQ_FD, &fd, &len);
  return fd;
}

bool readable(void* socket) {
  int events = 0;
  size_t len = sizeof(events);
  return zmq_getsockopt(socket, ZMQ_EVENTS, &events, &len) == 0 && (events & ZMQ_POLLIN) != 0;
}

// Receives one frame without blocking; false when none is waiting.
bool recv_frame(void* socket, zmq_msg_t* msg) {
  zmq_msg_init(msg);
  if (zmq_msg_recv(msg, socket, ZMQ_DONTWAIT) >= 0) return true;
  zmq_msg_close(msg);
  return false;
}

}  // namespace

Result<std::unique_ptr<Server>> Server::start(RealExecutor& executor,
                                              const ServerOptions& options) {
  std::unique_ptr<Server> s(new Server(executor, options));
  s->context_ = zmq_ctx_new();
  if (!s->context_) return zmq_error("zmq_ctx_new");
  s->router_ = zmq_socket(s->context_, ZMQ_ROUTER);
  if (!s->router_) return zmq_error("zmq_socket(ROUTER)");
  const int linger = 0;
  zmq_setsockopt(s->router_, ZMQ_LINGER, &linger, sizeof(linger));
  // Messages up to twice the protocol's limit get a typed error from the decoder; a connection
  // sending a larger one is dropped by ZeroMQ before the bytes are held.
  const int64_t max_msg = 2 * static_cast<int64_t>(kMaxMessageBytes);
  zmq_setsockopt(s->router_, ZMQ_MAXMSGSIZE, &max_msg, sizeof(max_msg));
  // Per connection: ZeroMQ's pipe holds a few messages before the inbox takes them (so at most
  // 64 * 2 MiB of a connection's bytes sit outside the inboxes' accounting); replies to a peer
  // that does not read them are dropped beyond kReplyHwm.
  const int rcv_hwm = static_cast<int>(std::min<uint32_t>(options.max_queued_messages, 64));
  zmq_setsockopt(s->router_, ZMQ_SNDHWM, &kReplyHwm, sizeof(kReplyHwm));
  zmq_setsockopt(s->router_, ZMQ_RCVHWM, &rcv_hwm, sizeof(rcv_hwm));
  const std::string monitor_endpoint = "inproc://tempokvd-monitor";
  if (zmq_socket_monitor(s->router_, monitor_endpoint.c_str(), ZMQ_EVENT_DISCONNECTED) != 0) {
    return zmq_error("zmq_socket_monitor");
  }
  s->monitor_ = zmq_socket(s->context_, ZMQ_PAIR);
  if (!s->monitor_ || zmq_connect(s->monitor_, monitor_endpoint.c_str()) != 0) {
    return zmq_error("connect monitor");
  }
  if (options.max_connections > 0) {
    // Before the bind: the first connection is already accepted under the guard.
    TEMPOKV_RETURN_IF_ERROR(
        AcceptGuard::arm(options.endpoint, options.max_connections, options.fd_limit));
    s->guarded_ = true;
  }
  if (zmq_bind(s->router_, options.endpoint.c_str()) != 0) {
    return zmq_error("bind " + options.endpoint);
  }
  char last[512] = {};
  size_t len = sizeof(last);
  zmq_getsockopt(s->router_, ZMQ_LAST_ENDPOINT, last, &len);
  s->endpoint_ = last;
  s->router_fd_ = socket_fd(s->router_);
  s->monitor_fd_ = socket_fd(s->monitor_);
  std::weak_ptr<int> alive = s->alive_;
  Server* self = s.get();
  auto on_ready = [self, alive](uint32_t) {
    if (!alive.expired()) self->drain();
  };
  TEMPOKV_RETURN_IF_ERROR(executor.watch(s->router_fd_, EPOLLIN, on_ready));
  TEMPOKV_RETURN_IF_ERROR(executor.watch(s->monitor_fd_, EPOLLIN, on_ready));
  return s;
}

Server::~Server() {
  if (router_fd_ >= 0) (void)executor_.unwatch(router_fd_);
  if (monitor_fd_ >= 0) (void)executor_.unwatch(monitor_fd_);
  sweep_timer_.cancel();
  if (router_) {
    zmq_socket_monitor(router_, nullptr, 0);
    zmq_close(router_);
  }
  if (monitor_) zmq_close(monitor_);
  if (context_) zmq_ctx_term(context_);
  if (guarded_) AcceptGuard::disarm();
}

void Server::attach(ServiceCore& core) {
  core_ = &core;
  sweep();
  post_drain();
}

void Server::stop_reading() { reading_ = false; }

void Server::post_drain() {
  if (drain_posted_) return;
  drain_posted_ = true;
  std::weak_ptr<int> alive = alive_;
  executor_.post([this, alive] {
    if (alive.expired()) return;
    drain_posted_ = false;
    drain();
  });
}

void Server::drain() {
  if (!core_) return;
  // Disconnects first: a descriptor number reused by a new connection must not end the new
  // session, and its messages can only be behind the old connection's disconnect event.
  drain_monitor();
  if (reading_) read_messages();
  drain_monitor();
  serve_inboxes();
  // ZMQ_FD signals edges: if anything is left, come back after the loop's other work.
  if (reading_ && (readable(router_) || !ring_.empty())) post_drain();
}

void Server::read_messages() {
  const TimePoint now = executor_.clock_now();  // when read, not when the event began
  for (int n = 0; n < kReadBatch; ++n) {
    // A receive that finds nothing costs what asking ZMQ_EVENTS first would (both process the
    // socket's commands); asking first cost that again for every message.
    zmq_msg_t frame;
    if (!recv_frame(router_, &frame)) break;
    std::string identity(static_cast<const char*>(zmq_msg_data(&frame)), zmq_msg_size(&frame));
    zmq_msg_close(&frame);
    // The payload frames; a well-formed client sends exactly one.
    std::vector<std::byte> payload;
    int frames = 0;
    int fd = -1;
    int more = 1;
    size_t more_len = sizeof(more);
    zmq_getsockopt(router_, ZMQ_RCVMORE, &more, &more_len);
    Inbox& inbox = inboxes_[identity];
    const bool full =
        inbox.messages.size() >= options_.max_queued_messages || inbox.bytes >= kMaxQueuedBytes;
    while (more) {
      if (!recv_frame(router_, &frame)) break;
      ++frames;
      if (frames == 1) {
        fd = zmq_msg_get(&frame, ZMQ_SRCFD);
        if (!full) {
          const auto* p = static_cast<const std::byte*>(zmq_msg_data(&frame));
          payload.assign(p, p + zmq_msg_size(&frame));
        }
      }
      more = zmq_msg_more(&frame);
      zmq_msg_close(&frame);
    }
    ++stats_.messages;
    if (fd >= 0) inbox.fd = fd;
    if (full || frames != 1) {
      if (inbox.messages.empty()) inboxes_.erase(identity);
      ++stats_.bad_messages;
      if (full) ++stats_.dropped_messages;
      reply_error(identity, std::nullopt,
                  full ? Status::resource_exhausted(
                             "the session's queue is full (" +
                             std::to_string(options_.max_queued_messages) +
                             " messages, server.max_queued_messages, or " +
                             std::to_string(kMaxQueuedBytes >> 20) +
                             " MiB): message refused unread; wait for replies before sending more")
                       : Status::invalid_argument("a message must be exactly one frame, got " +
                                                  std::to_string(frames)));
      continue;
    }
    if (inbox.messages.empty()) ring_.push_back(identity);
    inbox.bytes += payload.size();
    stats_.queued_bytes += payload.size();
    ++stats_.queued_messages;
    backlog_peak_bytes_ = std::max(backlog_peak_bytes_, stats_.queued_bytes);
    inbox.messages.push_back({std::move(payload), now});
  }
}

void Server::serve_inboxes() {
  for (int n = 0; n < kBatch && !ring_.empty() && reading_; ++n) {
    if (n > 0 && n % 16 == 0) {
      // Keep reading while serving: what waits in ZeroMQ's pipe moves to the inboxes, so a
      // disconnect behind a backlog is seen (and the backlog discarded) before it is served.
      read_messages();
      drain_monitor();
      if (ring_.empty()) break;
    }
    std::string identity = std::move(ring_.front());
    ring_.pop_front();
    auto it = inboxes_.find(identity);
    if (it == inboxes_.end()) continue;  // discarded meanwhile
    executor_.renew_now();               // each message is an event of its own
    Inbox& inbox = it->second;
    Inbox::Message m = std::move(inbox.messages.front());
    inbox.messages.pop_front();
    inbox.bytes -= m.payload.size();
    stats_.queued_bytes -= m.payload.size();
    --stats_.queued_messages;
    const int fd = inbox.fd;
    if (inbox.messages.empty()) {
      inboxes_.erase(it);
    } else {
      ring_.push_back(identity);  // its next message waits for every other peer's
    }
    on_message(std::move(identity), m.payload, fd, m.received);
  }
  if (stats_.queued_bytes == 0 && backlog_peak_bytes_ > kTrimBytes) {
    // A flood has drained: hand the heap it used back to the system.
    malloc_trim(0);
    backlog_peak_bytes_ = 0;
  }
}

void Server::discard_inbox(const std::string& identity) {
  auto it = inboxes_.find(identity);
  if (it == inboxes_.end()) return;
  stats_.discarded_messages += it->second.messages.size();
  stats_.queued_messages -= it->second.messages.size();
  stats_.queued_bytes -= it->second.bytes;
  inboxes_.erase(it);  // its place in ring_ is skipped when reached
}

void Server::drain_monitor() {
  while (readable(monitor_)) {
    zmq_msg_t frame;
    if (!recv_frame(monitor_, &frame)) return;
    uint16_t event = 0;
    int32_t value = -1;
    if (zmq_msg_size(&frame) >= 6) {
      std::memcpy(&event, zmq_msg_data(&frame), 2);
      std::memcpy(&value, static_cast<const char*>(zmq_msg_data(&frame)) + 2, 4);
    }
    const bool more = zmq_msg_more(&frame);
    zmq_msg_close(&frame);
    if (more && recv_frame(monitor_, &frame)) zmq_msg_close(&frame);  // the endpoint frame
    if (event != ZMQ_EVENT_DISCONNECTED) continue;
    std::vector<std::string> gone;
    for (const auto& [identity, peer] : by_identity_)
      if (peer.fd == value) gone.push_back(identity);
    for (const std::string& identity : gone) {
      ++stats_.sessions_disconnected;
      end_peer(identity);
    }
    // Peers that never said hello hold nothing but their backlog.
    std::vector<std::string> silent;
    for (const auto& [identity, inbox] : inboxes_)
      if (inbox.fd == value) silent.push_back(identity);
    for (const std::string& identity : silent) discard_inbox(identity);
  }
}

void Server::on_message(std::string identity, const std::vector<std::byte>& payload, int fd,
                        TimePoint received) {
  std::optional<uint64_t> id;
  Result<Request> request = decode_request(payload, &id);
  handling_since_ = received;
  handling_ = true;
  auto it = by_identity_.find(identity);
  if (!request.is_ok()) {
    ++stats_.bad_messages;
    reply_error(identity, id, request.status());
  } else if (it == by_identity_.end() && !std::holds_alternative<Hello>(request->op)) {
    // Only a valid hello creates a session: anything else from an unknown peer is answered
    // and forgotten, so garbage from many peers holds no state and takes no session slot.
    ++stats_.bad_messages;
    reply_error(identity, request->id,
                Status::failed_precondition(std::string(op_name(request->op)) +
                                            ": the session has not said hello"));
  } else if (it == by_identity_.end()) {
    open_session(identity, *request, fd);
  } else {
    Peer& peer = it->second;
    peer.last_seen = handling_since_;
    if (fd >= 0) peer.fd = fd;
    on_request(peer, *request);
  }
  handling_ = false;
}

void Server::open_session(const std::string& identity, const Request& r, int fd) {
  // A peer exists only once its hello was accepted: a refused hello (no common version, a wrong
  // token, a full runtime) leaves nothing behind, so it holds no session slot however often the
  // peer tries again.
  const Hello& hello = std::get<Hello>(r.op);
  if (by_identity_.size() >= options_.max_sessions) {
    ++stats_.sessions_refused;
    return reply_error(identity, r.id,
                       Status::resource_exhausted("tempokvd serves at most " +
                                                  std::to_string(options_.max_sessions) +
                                                  " sessions (server.max_sessions)"));
  }
  std::optional<uint32_t> v = pick_version(hello.versions);
  if (!v) {
    ++stats_.bad_messages;
    ++stats_.hellos_refused;
    return reply_error(
        identity, r.id,
        Status::invalid_argument("hello: no common protocol version (this server speaks " +
                                 std::to_string(kMinProtocolVersion) + ".." +
                                 std::to_string(kProtocolVersion) + ")"));
  }
  const uint64_t session = next_session_;
  Result<HelloResult> result = core_->open_session(session, hello, *v);
  if (!result.is_ok()) {
    ++stats_.hellos_refused;
    return reply_error(identity, r.id, result.status());
  }
  ++next_session_;
  Peer peer;
  peer.session = session;
  peer.identity = identity;
  peer.version = *v;
  peer.last_id = r.id;
  peer.last_seen = handling_since_;
  peer.fd = fd;
  by_session_[session] = identity;
  by_identity_.emplace(identity, std::move(peer));
  send_raw(identity, encode_hello_reply(r.id, *result));
}

void Server::on_request(Peer& peer, const Request& r) {
  const std::string identity = peer.identity;
  auto refuse = [&](const std::string& why) {
    ++stats_.bad_messages;
    reply_error(identity, r.id, Status::failed_precondition(why));
  };
  if (std::holds_alternative<Hello>(r.op)) {
    return refuse("hello: this session already said hello");
  }
  if (r.version != peer.version) {
    return refuse("message in protocol version " + std::to_string(r.version) +
                  ", but the session negotiated " + std::to_string(peer.version));
  }
  if (r.id <= peer.last_id) {
    return refuse("request id " + std::to_string(r.id) + " is not above the previous id " +
                  std::to_string(peer.last_id));
  }
  peer.last_id = r.id;
  if (std::holds_alternative<Bye>(r.op)) {
    send_raw(identity, encode_reply(r.id));
    return end_peer(identity);
  }
  core_->handle(peer.session, r.id, r.op);
}

void Server::reply_error(const std::string& identity, std::optional<uint64_t> id,
                         const Status& st) {
  send_raw(identity, encode_error(id, st));
}

void Server::send(uint64_t session, const std::vector<std::byte>& message) {
  auto it = by_session_.find(session);
  if (it != by_session_.end()) send_raw(it->second, message);
}

void Server::send_raw(const std::string& identity, const std::vector<std::byte>& message) {
  // A gone peer's messages are dropped by the ROUTER (not mandatory routing).
  zmq_send(router_, identity.data(), identity.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT);
  zmq_send(router_, message.data(), message.size(), ZMQ_DONTWAIT);
  ++stats_.replies;
  if (handling_) {
    const double s = to_seconds(executor_.clock_now() - handling_since_);  // handling included
    latency_.observe(s);
    latency_sum_s_ += s;
    ++latency_count_;
  }
  // Sending may consume the descriptor's edge for messages that arrived meanwhile.
  if (readable(router_)) post_drain();
}

double Server::latency_quantile(double q) const { return latency_.quantile(q); }

ServerStats Server::stats() const {
  ServerStats s = stats_;
  if (guarded_) {
    const AcceptGuard::Stats g = AcceptGuard::stats();
    s.connections = g.connections;
    s.connections_refused = g.refused;
  }
  return s;
}

void Server::close_idle_connections() {
  if (!guarded_ || !reading_) return;
  std::vector<AcceptGuard::Connection> idle = AcceptGuard::idle_connections(
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.hello_timeout));
  if (idle.empty()) return;
  // A connection with a session, or with messages waiting (a hello not served yet), is busy.
  std::unordered_set<int> busy;
  for (const auto& [identity, peer] : by_identity_) busy.insert(peer.fd);
  for (const auto& [identity, inbox] : inboxes_) busy.insert(inbox.fd);
  for (const AcceptGuard::Connection& c : idle) {
    if (busy.count(c.fd)) continue;
    if (AcceptGuard::shut(c)) ++stats_.connections_idle_closed;
  }
}

void Server::end_peer(const std::string& identity) {
  discard_inbox(identity);
  auto it = by_identity_.find(identity);
  if (it == by_identity_.end()) return;
  const uint64_t session = it->second.session;
  // The connection holds no session from now: it may open another within hello_timeout.
  if (guarded_ && it->second.fd >= 0) AcceptGuard::touch(it->second.fd);
  by_identity_.erase(it);
  by_session_.erase(session);
  core_->close_session(session);
}

void Server::sweep() {
  // Messages already waiting prove their senders alive: a loop that fell behind must not time
  // out sessions whose requests it has not read yet.
  for (int i = 0; i < 64 && core_ && reading_ && readable(router_); ++i) drain();
  const TimePoint now = executor_.now();
  std::vector<std::string> gone;
  for (const auto& [identity, peer] : by_identity_) {
    if (now - peer.last_seen <= options_.heartbeat_timeout) continue;
    if (inboxes_.count(identity)) continue;  // its waiting messages prove it alive
    // Still waiting for a reply the daemon owes it: its silence is the daemon's doing.
    if (core_->owes_reply(peer.session)) continue;
    gone.push_back(identity);
  }
  for (const std::string& identity : gone) {
    ++stats_.sessions_timed_out;
    end_peer(identity);
  }
  close_idle_connections();
  const Duration period =
      std::max<Duration>(options_.heartbeat_timeout / 8, std::chrono::milliseconds(5));
  std::weak_ptr<int> alive = alive_;
  sweep_timer_ = executor_.after(period, [this, alive] {
    if (!alive.expired()) sweep();
  });
}

}  // namespace tempokv::service
