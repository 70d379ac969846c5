// ServiceClient: the runtime adapter's calls carried to tempokvd (docs/protocol.md, versions 1..4),
// the out-of-process twin of RuntimeAdapter. A runtime written against RuntimeApi switches by
// constructing this instead of an adapter.
//
// Each call is one request on a ZeroMQ DEALER socket and blocks until its reply (at most
// ClientOptions::call_timeout; then Unavailable). An error reply comes back as the Status the
// daemon's adapter returned (same code, same message). Ready notifications that arrive while a
// call waits are queued, never lost, and delivered by dispatch(): a `wait` answer's callback
// runs from dispatch(), never from inside another call. Claims answered ready (at once or by
// notification) expose their objects' spans in the fast tier's shared mapping (objects(),
// tier_data()) until end_transfer or cancel.
//
// Pipelined reports (ClientOptions::pipeline_reports): the progress reports a runtime makes
// every iteration (update_order, iteration_started, admitted, prefill_done, tokens_generated,
// finished, object_transferred) return once sent, without waiting for their replies. The daemon
// handles a session's requests in order, so the next call that waits sees their effects; an error
// they are answered with is counted in late_errors() when it arrives, not returned.
//
// Event loops: fd() is ZMQ_FD, which signals a change of the socket's state, not queued
// messages; after it fires, or after any call, has_pending() says whether dispatch() has work.
// attach() does all of that on a RealExecutor and sends heartbeats while the runtime is quiet.
//
// Recovery (ClientOptions::background_heartbeat, reconnect): a background thread sends a
// heartbeat whenever no request went out for a third of the daemon's heartbeat timeout, so an
// idle runtime keeps its session. When the daemon no longer knows the session (it restarted, or
// the session timed out), the next call or dispatch() says hello again, maps the tier and write
// region anew when the daemon is a new instance (HelloResult::instance), and fails every claim
// this client held: a waiting claim's callback gets Unavailable from dispatch(), a ready
// claim's objects() answers Unavailable ("lost"); the call that found out is then made again
// (abort_write, whose offset belonged to the old session, answers Unavailable instead; put makes
// its reservation and put again). Pointers into the old tier_data() are invalid after a recovery
// (recoveries() counts them).
// A daemon that is down fails calls fast: a request that cannot be handed to a connection
// within its timeout is Unavailable (lookup waits at most lookup_timeout), and while the
// background heartbeat finds the daemon down, at once. The heartbeat thread runs independently
// of the calls: a call holds the socket only to send and to read what is there, never while it
// waits, so while a reply is overdue (over a second) the thread probes the daemon with a
// heartbeat, which a daemon that is up answers at once; a daemon that is gone (no connection),
// silent for a heartbeat interval (a third of its heartbeat timeout), or that lost the session
// fails the call in flight at once with Unavailable instead of its whole timeout.
//
// Ownership: owns its socket and its mappings of the daemon's files (not the files). The
// destructor sends nothing: the daemon ends the session when it notices the disconnect or the
// heartbeat timeout; bye() ends it at once.
//
// Threading: not thread-safe. One thread makes every call, runs dispatch() and destroys the
// client; when attached, that is the executor's loop thread. (The background heartbeat thread
// shares only the socket and the awaited replies with it, under a lock held for a socket
// operation at a time, and never runs callbacks.)
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tempokv/client_mapping.h"
#include "tempokv/executor.h"
#include "tempokv/protocol.h"
#include "tempokv/runtime_api.h"

namespace tempokv {

class RealExecutor;
namespace service {
class ClientSocket;
}

struct ClientOptions {
  std::string endpoint;  // the daemon's ZeroMQ endpoint ("ipc:///run/tempokvd.sock", "tcp://...")
  std::string name;      // this client's name in the daemon's logs ("": none)
  std::string runtime;   // the runtime to join (tensor-parallel ranks share one); "": its own
  uint32_t max_active = 0;  // the runtime's slot limit if this hello creates it; 0: the default
  uint32_t token_budget = 0;  // tokens per step if this hello creates the runtime (Hello)
  bool async_loads = false;   // its loads hold no slot, if this hello creates the runtime (Hello)
  uint32_t ranks = 0;  // sessions that copy each claim, if this hello creates the runtime
  std::string token;   // the runtime's token, when the daemon's server.tokens_file lists it
  Duration call_timeout = std::chrono::seconds(10);  // longest wait for one reply
  bool map_shared_memory = true;  // map the fast tier (read-only) and the write region
  bool pipeline_reports = false;  // progress reports do not wait for their replies (see above)
  // A lookup waits at most this long (a serving engine falls back to recompute rather than
  // stall on a daemon that is down).
  Duration lookup_timeout = std::chrono::milliseconds(250);
  bool background_heartbeat = true;  // heartbeat from a background thread (see Recovery)
  bool reconnect = true;  // say hello again when the daemon lost the session (see Recovery)
  // A step gives its decoders and waiting order as edits of the last step's (protocol v4) where
  // that is shorter; false: always in full.
  bool step_edits = true;
  Status validate() const;
};

class ServiceClient final : public RuntimeApi {
 public:
  // Connects, says hello and maps the daemon's shared files. Unavailable, naming the endpoint,
  // when no hello reply comes within call_timeout.
  static Result<std::unique_ptr<ServiceClient>> connect(const ClientOptions& options);
  ~ServiceClient() override;
  ServiceClient(const ServiceClient&) = delete;
  ServiceClient& operator=(const ServiceClient&) = delete;

  Status add_request(const RequestInfo& request) override;
  // add_request, then report_hit of `manifest`: one round trip from protocol version 4 (two
  // before). A refused report takes the request back: it is added with its hit or not at all.
  Status add_request(const RequestInfo& request, std::vector<ManifestEntry> manifest);
  Status report_hit(uint64_t id, std::vector<ManifestEntry> manifest) override;
  Status update_order(std::span<const uint64_t> waiting,
                      Duration boundary_in = Duration::zero()) override;
  Status iteration_started(std::span<const uint64_t> prefills,
                           std::span<const uint64_t> decoders) override;
  Status admitted(uint64_t id) override;
  Status prefill_done(uint64_t id) override;
  Status tokens_generated(uint64_t id, uint32_t total_generated) override;
  Status finished(uint64_t id, uint32_t output_tokens) override;
  // With kWait, on_ready runs from dispatch() once the daemon's ready notification arrives.
  Result<RetrievalAnswer> request_retrieval(uint64_t id, RetrievalCallback on_ready) override;
  Status begin_transfer(uint64_t id) override;
  Status end_transfer(uint64_t id) override;  // on success the claim's spans are forgotten
  Status object_transferred(uint64_t id, const Key& key) override;
  Status cancel(uint64_t id) override;  // the claim's spans are forgotten whatever the answer
  // Always FailedPrecondition: the daemon keeps its estimates to itself.
  Result<Duration> last_ttu(uint64_t id) const override;

  Status heartbeat();
  // Ends the session now. The client is closed afterwards (even when the bye failed): every
  // later call is FailedPrecondition and pending callbacks are dropped.
  Status bye();
  // Each key's payload bytes in the store (0 when absent).
  Result<std::vector<uint64_t>> lookup(std::span<const Key> keys);
  // Stores an object: reserves room in the write region, copies the payload there and puts it,
  // returning once the daemon says it is durable. A put of the bytes already stored under the key
  // succeeds without writing, so a put is safe to repeat: when the daemon loses the session while
  // the put is in flight (it restarted) and answers again, the put is made once more in the new
  // session; when the daemon is down, the put fails at once (Unavailable, saying whether the
  // object was stored is unknown) and the caller may put the same bytes again later.
  // FailedPrecondition without a write region.
  Status put(const Key& key, TokenRange tokens, std::span<const std::byte> payload);
  Result<service::StatList> stats();
  // Protocol v2: one message per scheduler iteration (docs/protocol.md, "step") carrying the
  // batch, the finished and newly queued requests and the waiting order, in place of the
  // add_request / admitted / iteration_started / prefill_done / tokens_generated / finished /
  // update_order calls. Sent without waiting (its seq is set here); an error it is answered with
  // is counted in late_errors(). FailedPrecondition when the daemon speaks only version 1.
  // Give the lists in full (`base` unset): from version 4 the client sends them as edits of the
  // last step's where shorter (ClientOptions::step_edits), in full again after a late error or
  // a recovery.
  Status step(service::Step step);

  // A ready claim's objects, one span per manifest entry in manifest order, located in
  // tier_data(). NotFound for a claim not answered here; FailedPrecondition while it waits;
  // Cancelled once dispatch() delivered a cancel by another session of the runtime (stop copying
  // and call end_transfer: the daemon keeps the bytes protected until then).
  // Internal for a span outside the tier mapping (never served).
  Result<std::vector<service::TierSpan>> objects(uint64_t id) const;
  const service::HelloResult& hello() const { return hello_; }
  // The runtime's write region this client mapped at its first put ("" before one).
  std::string write_region_path() const {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    return write_path_;
  }
  const std::byte* tier_data() const { return tier_.data(); }  // null when not mapped
  uint64_t tier_bytes() const { return tier_.bytes(); }

  // Requests sent (the hello, each of put's steps and pipelined reports included) and the
  // wall-clock seconds from sending each to its reply or failure (a pipelined report: to its
  // send): what the service costs the calling thread.
  uint64_t calls() const { return calls_; }
  double call_seconds() const { return call_seconds_; }
  // Error replies that arrived after nobody waited for them (pipelined reports, calls that timed
  // out), and the last of them.
  uint64_t late_errors() const { return late_errors_; }
  const Status& last_late_error() const { return last_late_error_; }
  // Hellos said again after the daemon lost the session (see Recovery).
  uint64_t recoveries() const { return recoveries_; }

  int fd() const;
  // Queued notifications, or messages readable on the socket.
  bool has_pending() const;
  // Reads every message already here without blocking, then runs the callbacks of the queued
  // notifications (which may call back in, calls and dispatch() included).
  void dispatch();
  // Runs dispatch() from `executor` when fd() fires and after calls that leave work pending,
  // and sends a heartbeat whenever no request went out for heartbeat_timeout_ms / 3.
  // FailedPrecondition when already attached or closed. The executor must outlive the
  // attachment (detach() or the destructor ends it).
  Status attach(RealExecutor& executor);
  void detach();  // the destructor detaches too

 private:
  struct Claim {
    bool waiting = false;  // answered wait; its ready notification has not been delivered
    bool ready = false;    // `objects` are valid
    RetrievalCallback on_ready;
    std::vector<service::TierSpan> objects;
    Status lost;  // why a ready claim was taken away (cancelled by another session)
  };

  ServiceClient(ClientOptions options, std::unique_ptr<service::ClientSocket> socket);
  Status map_shared_memory();
  // Sends one request and waits for its reply; notifications met meanwhile are queued. Recovers
  // a lost session first (or when the reply says it is lost, then asks again).
  Result<service::Reply> call(service::Op op);
  Result<service::Reply> call_once(const service::Op& op);
  Result<service::Reply> exchange(const service::Request& request);  // counted in calls()
  // Sends and waits for the reply without holding the socket while it waits (the heartbeat
  // thread uses it meanwhile). wait_for_connection false: a request no connection takes at once
  // is Unavailable. `caller`: the runtime's thread, whose call fails at once when the heartbeat
  // thread finds the daemon down or the session lost after the request left.
  Result<service::Reply> exchange_once(const service::Request& request, Duration timeout,
                                       bool wait_for_connection = true, bool caller = true);
  // client_recovery.cc
  service::Hello hello_request() const;
  // Says hello (version 1) and checks the version the daemon picked.
  Result<service::HelloResult> say_hello();
  // The daemon no longer knows this session: hello again, remap if it is a new instance, fail
  // the claims held here. Not from the heartbeat thread.
  Status recover();
  static bool session_gone(const Status& st);
  void start_heartbeat_thread();
  void stop_heartbeat_thread();
  void heartbeat_loop();
  Status call_status(service::Op op) { return call(std::move(op)).status(); }
  // One reservation, copy and put (client_ops.cc).
  Status put_once(const Key& key, TokenRange tokens, std::span<const std::byte> payload);
  // A progress report: call_status, or sent without waiting with pipeline_reports.
  Status report(service::Op op);
  // Sends without waiting for the reply (an error reply is counted in late_errors()).
  Status send_only(service::Op op);
  // Hands the request to the socket, waiting up to `timeout` for a connection (for the caller's
  // thread, not past the heartbeat finding the daemon down).
  Status send_request(const service::Request& request, Duration timeout, bool caller);
  void note_unawaited(const service::ServerMessage& message);
  // The write region a reserve_write reply names, mapped (once per path).
  Result<std::shared_ptr<service::ClientMapping>> write_region(const service::Reply& reserved);
  // Under mu_: reads every message already here, filing replies under their awaited ids and
  // queueing notifications. A reply nobody awaits is dropped (an error one counted).
  void route_messages();
  // Under mu_: the reply to awaited request `id` (its waiter woken); false when not awaited.
  bool file_reply(uint64_t id, Result<service::Reply> reply);
  void drain_socket();
  void deliver(service::ReadyNotification notification);
  void schedule_dispatch();
  void arm_heartbeat();
  void on_heartbeat_timer();
  Duration heartbeat_interval() const;

  ClientOptions options_;
  std::unique_ptr<service::ClientSocket> socket_;
  service::HelloResult hello_;
  uint32_t version_ = service::kProtocolVersion;  // negotiated by the hello
  uint64_t next_id_ = 1;
  bool closed_ = false;  // after bye()
  uint64_t calls_ = 0;
  double call_seconds_ = 0;
  uint64_t late_errors_ = 0;
  Status last_late_error_;
  service::ClientMapping tier_;
  // The runtime's write region, mapped at the first reserve_write that names it (protocol v3);
  // shared with the puts copying into it, so a remap never unmaps under one. Under mu_.
  std::shared_ptr<service::ClientMapping> write_;
  std::string write_path_;
  std::unordered_map<uint64_t, Claim> claims_;            // by request id
  std::deque<service::ReadyNotification> notifications_;  // received, not yet delivered
  uint64_t recoveries_ = 0;
  uint64_t step_seq_ = 0;  // the seq of the last step sent
  // The lists of the last step sent whole (its seq; 0: none), which the next step may edit while
  // no late error arrived and no recovery happened since (their counts then).
  service::StepLists step_lists_;
  uint64_t step_lists_seq_ = 0, step_lists_errors_ = 0, step_lists_recoveries_ = 0;

  // Shared with the heartbeat thread: the socket, next_id_, version_, notifications_, late
  // errors, the awaited replies and the times below are used under mu_, held only for a
  // socket operation, never across a wait (recursive: a call's dispatch may call again).
  mutable std::recursive_mutex mu_;
  static constexpr std::chrono::milliseconds kWaitSlice{20};  // longest sleep between looks
  std::chrono::steady_clock::time_point last_request_{};  // when the last request went out
  // Requests whose reply a thread waits for, by id; filled by whichever thread reads it.
  std::unordered_map<uint64_t, std::optional<Result<service::Reply>>> awaited_;
  uint64_t caller_awaits_ = 0;  // the runtime thread's request in flight (0: none)
  std::atomic<bool> session_lost_{false};  // the heartbeat thread found the session gone
  std::atomic<bool> daemon_down_{false};   // the heartbeat thread's last heartbeat got no reply
  // Bumped each time the heartbeat thread finds the daemon down / the session lost: a call in
  // flight across a bump fails at once.
  std::atomic<uint64_t> down_epoch_{0};
  std::atomic<uint64_t> lost_epoch_{0};
  // When the runtime thread's request in flight left (steady clock, ns; 0: none): the heartbeat
  // thread probes the daemon while a reply is overdue.
  std::atomic<int64_t> call_waiting_since_ns_{0};
  std::atomic<int64_t> heartbeat_interval_ms_{0};
  std::thread heartbeat_thread_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // under stop_mu_

  RealExecutor* executor_ = nullptr;  // while attached
  TimerHandle heartbeat_timer_;
  TimePoint last_sent_{};         // executor time of the last request sent, while attached
  bool dispatch_posted_ = false;  // a dispatch task is queued on the executor
  // Shared with posted tasks: false once they must not touch this client (detached, destroyed).
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tempokv
