// ServiceClient: connecting, the request/reply exchange, and delivering notifications. The ops
// themselves are in client_ops.cc, the event-loop glue in client_loop.cc.
#include "tempokv/client.h"

#include <algorithm>
#include <utility>

#include "client/client_socket.h"
#include "executor/real_executor.h"

namespace tempokv {

using service::ReadyNotification;
using service::Reply;

Status ClientOptions::validate() const {
  if (endpoint.empty()) return Status::invalid_argument("ClientOptions.endpoint is empty");
  if (call_timeout <= Duration::zero()) {
    return Status::invalid_argument("ClientOptions.call_timeout must be positive");
  }
  if (lookup_timeout <= Duration::zero()) {
    return Status::invalid_argument("ClientOptions.lookup_timeout must be positive");
  }
  if (name.size() > service::kMaxStringBytes || runtime.size() > service::kMaxStringBytes) {
    return Status::invalid_argument("ClientOptions.name and .runtime must be at most " +
                                    std::to_string(service::kMaxStringBytes) + " bytes");
  }
  return Status::ok();
}

ServiceClient::ServiceClient(ClientOptions options, std::unique_ptr<service::ClientSocket> socket)
    : options_(std::move(options)), socket_(std::move(socket)) {}

ServiceClient::~ServiceClient() {
  stop_heartbeat_thread();
  detach();
  *alive_ = false;
}

Result<std::unique_ptr<ServiceClient>> ServiceClient::connect(const ClientOptions& options) {
  TEMPOKV_RETURN_IF_ERROR(options.validate());
  TEMPOKV_ASSIGN_OR_RETURN(auto socket, service::ClientSocket::open(options.endpoint));
  std::unique_ptr<ServiceClient> client(new ServiceClient(options, std::move(socket)));

  TEMPOKV_ASSIGN_OR_RETURN(client->hello_, client->say_hello());
  client->version_ = client->hello_.version;
  client->heartbeat_interval_ms_ = int64_t(client->hello_.heartbeat_timeout_ms / 3);
  if (options.map_shared_memory) {
    Status mapped = client->map_shared_memory();
    if (!mapped.is_ok()) {
      // The session exists on the daemon: end it now rather than at its heartbeat timeout.
      static_cast<void>(client->bye());
      return mapped;
    }
  }
  if (options.background_heartbeat) client->start_heartbeat_thread();
  return client;
}

Status ServiceClient::map_shared_memory() {
  auto tier = service::ClientMapping::map(hello_.tier_path, hello_.tier_bytes, false,
                                          /*populate=*/true);
  if (!tier.is_ok()) {
    return Status(tier.status().code(), "mapping the fast tier: " + tier.status().message());
  }
  // The write region is the runtime's own, named by the first reserve_write (put_once).
  tier_ = std::move(tier).value();
  return Status::ok();
}

Result<Reply> ServiceClient::call(service::Op op) {
  if (closed_) {
    return Status::failed_precondition(std::string(service::op_name(op)) +
                                       ": the client is closed (bye was sent)");
  }
  const bool may_recover = options_.reconnect && !std::holds_alternative<service::Bye>(op);
  if (may_recover && session_lost_.load()) TEMPOKV_RETURN_IF_ERROR(recover());
  Result<Reply> reply = call_once(op);
  if (may_recover && !reply.is_ok() && session_gone(reply.status())) {
    TEMPOKV_RETURN_IF_ERROR(recover());
    if (std::holds_alternative<service::Put>(op) ||
        std::holds_alternative<service::AbortWrite>(op)) {
      return Status::unavailable(std::string(service::op_name(op)) +
                                 ": tempokvd lost this client's session and its write "
                                 "reservations; a new session is open, reserve again");
    }
    reply = call_once(op);
  }
  // fd() may not fire for messages that came in behind the reply: the wait consumed the signal.
  schedule_dispatch();
  return reply;
}

Result<Reply> ServiceClient::call_once(const service::Op& op) {
  uint64_t id = 0;
  uint32_t version = 0;
  {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    id = next_id_++;
    version = version_;
  }
  return exchange(service::Request{.version = version, .id = id, .op = op});
}

Result<Reply> ServiceClient::exchange(const service::Request& request) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point started = Clock::now();
  const Duration timeout = std::holds_alternative<service::Lookup>(request.op)
                               ? std::min(options_.lookup_timeout, options_.call_timeout)
                               : options_.call_timeout;
  Result<Reply> reply = exchange_once(request, timeout);
  ++calls_;
  call_seconds_ += std::chrono::duration<double>(Clock::now() - started).count();
  return reply;
}

Status ServiceClient::report(service::Op op) {
  if (!options_.pipeline_reports) return call_status(std::move(op));
  return send_only(std::move(op));
}

Status ServiceClient::send_only(service::Op op) {
  if (closed_) {
    return Status::failed_precondition(std::string(service::op_name(op)) +
                                       ": the client is closed (bye was sent)");
  }
  if (options_.reconnect && session_lost_.load()) TEMPOKV_RETURN_IF_ERROR(recover());
  using Clock = std::chrono::steady_clock;
  const Clock::time_point started = Clock::now();
  service::Request request{.op = std::move(op)};
  {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    request.version = version_;
    request.id = next_id_++;
  }
  Status st = send_request(request, Duration{}, /*caller=*/true);
  ++calls_;
  call_seconds_ += std::chrono::duration<double>(Clock::now() - started).count();
  return st;
}

Status ServiceClient::send_request(const service::Request& request, Duration timeout,
                                   bool caller) {
  const std::vector<std::byte> bytes = service::encode_request(request);
  if (hello_.max_message_bytes != 0 && bytes.size() > hello_.max_message_bytes) {
    return Status::invalid_argument(std::string(service::op_name(request.op)) + ": message of " +
                                    std::to_string(bytes.size()) +
                                    " bytes exceeds the daemon's limit of " +
                                    std::to_string(hello_.max_message_bytes) + " bytes");
  }
  using Clock = std::chrono::steady_clock;
  // A daemon the heartbeat found down is not waited for, nor one it finds down meanwhile.
  const uint64_t down = down_epoch_.load();
  const Duration wait = daemon_down_.load() ? Duration::zero() : timeout;
  const Clock::time_point deadline = Clock::now() + wait;
  for (;;) {
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      Status st = socket_->send(bytes);
      if (st.is_ok()) {
        last_request_ = Clock::now();
        if (caller && executor_ != nullptr) last_sent_ = executor_->now();
        return st;
      }
      if (st.code() != StatusCode::kUnavailable) return st;
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left <= std::chrono::milliseconds::zero() || (caller && down_epoch_.load() != down)) break;
    // Not holding the socket: the heartbeat thread may find the daemon down meanwhile.
    socket_->wait(std::min(left, kWaitSlice));
  }
  return Status::unavailable(
      "tempokvd at " + options_.endpoint + " is not reachable (no connection took " +
      std::string(service::op_name(request.op)) + " within " +
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(wait).count()) +
      " ms" + (daemon_down_.load() ? "; the background heartbeat finds it down)" : ")"));
}

void ServiceClient::note_unawaited(const service::ServerMessage& message) {
  // Replies to pipelined reports and to calls that timed out: nobody waits for them, but an
  // error must not vanish.
  if (const auto* e = std::get_if<service::ErrorReply>(&message)) {
    ++late_errors_;
    last_late_error_ = e->error;
    if (session_gone(e->error)) session_lost_ = true;
  }
}

bool ServiceClient::file_reply(uint64_t id, Result<Reply> reply) {
  auto it = awaited_.find(id);
  if (it == awaited_.end() || it->second) return false;
  it->second = std::move(reply);
  socket_->wake();  // its waiter may be asleep on another thread
  return true;
}

void ServiceClient::route_messages() {
  while (socket_->readable()) {
    auto frame = socket_->receive(std::chrono::milliseconds::zero());
    if (!frame.is_ok()) {
      if (frame.status().code() == StatusCode::kInvalidArgument) continue;  // a bad message, gone
      return;  // the socket failed; the next call reports it
    }
    if (!*frame) return;
    daemon_down_ = false;  // it answers
    Result<service::ServerMessage> msg = service::decode_server_message(**frame);
    if (!msg.is_ok()) {
      // With a call in flight this is most likely its reply; failing it now beats waiting out
      // the timeout. A late reply that follows is dropped as stale.
      if (caller_awaits_ != 0) {
        file_reply(caller_awaits_, Status::internal("undecodable message from tempokvd at " +
                                                    options_.endpoint + ": " +
                                                    msg.status().to_string()));
      }
      continue;
    }
    if (auto* n = std::get_if<ReadyNotification>(&*msg)) {
      notifications_.push_back(std::move(*n));
      continue;
    }
    if (auto* e = std::get_if<service::ErrorReply>(&*msg)) {
      // A nil id means the daemon could not read the envelope: that is the caller's request.
      const uint64_t id = e->id ? *e->id : caller_awaits_;
      if (!file_reply(id, e->error)) note_unawaited(*msg);
      continue;
    }
    Reply& r = std::get<Reply>(*msg);
    const uint64_t id = r.id;
    // Otherwise the reply to a pipelined report or a call that timed out: dropped.
    file_reply(id, std::move(r));
  }
}

Result<Reply> ServiceClient::exchange_once(const service::Request& request, Duration timeout,
                                           bool wait_for_connection, bool caller) {
  const std::string op(service::op_name(request.op));
  // Wall-clock time, not an Executor's: this wait blocks the calling thread on a socket, and a
  // client need not have an executor at all.
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + timeout;
  // What the heartbeat thread knew when the request left: news after that fails the call fast.
  const uint64_t down = down_epoch_.load(), lost = lost_epoch_.load();
  {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    awaited_[request.id];
    if (caller) caller_awaits_ = request.id;
  }
  // Whatever the outcome, the id is awaited no more.
  struct Forget {
    ServiceClient* c;
    uint64_t id;
    bool caller;
    ~Forget() {
      std::lock_guard<std::recursive_mutex> lock(c->mu_);
      c->awaited_.erase(id);
      if (caller) {
        c->caller_awaits_ = 0;
        c->call_waiting_since_ns_ = 0;
      }
    }
  } forget{this, request.id, caller};
  TEMPOKV_RETURN_IF_ERROR(
      send_request(request, wait_for_connection ? timeout : Duration{}, caller));
  if (caller) {
    call_waiting_since_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 Clock::now().time_since_epoch())
                                 .count();
  }
  for (;;) {
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      socket_->clear_wake();
      route_messages();
      auto it = awaited_.find(request.id);
      if (it != awaited_.end() && it->second) return std::move(*it->second);
    }
    if (caller && (lost_epoch_.load() != lost || down_epoch_.load() != down)) {
      const bool gone = lost_epoch_.load() != lost;
      std::string what = "tempokvd at " + options_.endpoint +
                         (gone ? " lost this client's session (it restarted, or the session "
                                 "timed out)"
                               : " stopped answering (the background heartbeat finds it down)") +
                         " while " + op + " (id " + std::to_string(request.id) +
                         ") was in flight";
      if (std::holds_alternative<service::Put>(request.op)) {
        what += "; whether the object was stored is unknown: put the same bytes again (a put of "
                "the bytes already stored under the key succeeds without writing)";
      }
      return Status::unavailable(what);
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left <= std::chrono::milliseconds::zero()) break;
    socket_->wait(std::min(left, kWaitSlice));
  }
  return Status::unavailable(
      "tempokvd at " + options_.endpoint + " did not answer " + op + " (id " +
      std::to_string(request.id) + ") within " +
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) +
      " ms");
}

int ServiceClient::fd() const { return socket_->fd(); }

bool ServiceClient::has_pending() const {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  return !notifications_.empty() || socket_->readable();
}

void ServiceClient::drain_socket() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  route_messages();
}

void ServiceClient::dispatch() {
  // Drain before each delivery and once more at the end: the last ZMQ_EVENTS read that finds
  // nothing is what re-arms fd(), and a callback's own calls may have queued more.
  // A session the heartbeat found gone: its claims' failures are delivered now, never a hang.
  if (options_.reconnect && !closed_ && session_lost_.load()) static_cast<void>(recover());
  for (;;) {
    drain_socket();
    ReadyNotification n;
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      if (notifications_.empty()) return;
      n = std::move(notifications_.front());
      notifications_.pop_front();
    }
    deliver(std::move(n));
  }
}

void ServiceClient::deliver(ReadyNotification notification) {
  auto it = claims_.find(notification.request_id);
  if (it == claims_.end()) return;  // unknown: ignored
  Claim& claim = it->second;
  if (!claim.waiting) {
    // A claim already ready fails only when another session of the runtime cancelled it: the
    // copy must stop and end its transfer (the daemon keeps the bytes until then).
    if (!notification.outcome.is_ok()) {
      claim.ready = false;
      claim.objects.clear();
      claim.lost = notification.outcome.status();
    }
    return;
  }
  claim.waiting = false;
  RetrievalCallback on_ready = std::move(claim.on_ready);
  claim.on_ready = nullptr;
  if (notification.outcome.is_ok()) {
    claim.ready = true;
    claim.objects = std::move(notification.objects);
  } else {
    claims_.erase(it);  // the daemon released the failed claim
  }
  // Last: the callback may call back in and change claims_.
  if (on_ready) on_ready(notification.request_id, std::move(notification.outcome));
}

Result<std::vector<service::TierSpan>> ServiceClient::objects(uint64_t id) const {
  auto it = claims_.find(id);
  if (it == claims_.end()) {
    return Status::not_found("objects: request " + std::to_string(id) +
                             " has no claim answered ready on this client");
  }
  if (!it->second.lost.is_ok()) return it->second.lost;
  if (!it->second.ready) {
    return Status::failed_precondition("objects: request " + std::to_string(id) +
                                       " is waiting for its ready notification");
  }
  // A span outside the tier's mapping is never handed to a copy: whatever it points at is not
  // this object (a daemon bug, or a reply meant for another mapping).
  const uint64_t tier_bytes = hello_.tier_bytes;
  for (const service::TierSpan& t : it->second.objects) {
    if (t.bytes == 0 || t.offset > tier_bytes || t.bytes > tier_bytes - t.offset) {
      return Status::internal("objects: request " + std::to_string(id) + " has a span of " +
                              std::to_string(t.bytes) + " bytes at offset " +
                              std::to_string(t.offset) + ", outside the fast tier's mapping of " +
                              std::to_string(tier_bytes) + " bytes: not served");
    }
  }
  return it->second.objects;
}

}  // namespace tempokv
