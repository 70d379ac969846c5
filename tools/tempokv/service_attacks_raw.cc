// The attacks that speak below the client library: plain connections and a bare ZeroMQ DEALER.
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <thread>

#include "service_attacks.h"
#include "tempokv/protocol.h"

namespace tempokv::cli {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long an attack waits for one answer: the daemon answers at once, unless the attack's own
// connection was refused (the idle connections hold every slot) and is being made again.
constexpr int kAnswerWaitMs = 2000;

bool running(const AttackTarget& t) { return Clock::now() < t.deadline; }

// Sleeps `d`, or less when the deadline comes first.
void pause(const AttackTarget& t, milliseconds d) {
  const auto until = std::min(Clock::now() + d, t.deadline);
  std::this_thread::sleep_until(until);
}

// A bare DEALER: sends whatever it is given, reads what comes back (or not).
class RawDealer {
 public:
  explicit RawDealer(const std::string& endpoint) {
    ctx_ = zmq_ctx_new();
    sock_ = zmq_socket(ctx_, ZMQ_DEALER);
    const int zero = 0;
    zmq_setsockopt(sock_, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_connect(sock_, endpoint.c_str());
  }
  ~RawDealer() {
    zmq_close(sock_);
    zmq_ctx_term(ctx_);
  }
  RawDealer(const RawDealer&) = delete;
  RawDealer& operator=(const RawDealer&) = delete;

  bool send(const std::vector<std::byte>& m, bool more = false) {
    return zmq_send(sock_, m.data(), m.size(), ZMQ_DONTWAIT | (more ? ZMQ_SNDMORE : 0)) >= 0;
  }
  // The next message within wait_ms, decoded; nullopt when none came or it did not decode.
  std::optional<service::ServerMessage> receive(int wait_ms) {
    zmq_pollitem_t item{sock_, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, wait_ms) <= 0) return std::nullopt;
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, sock_, ZMQ_DONTWAIT) < 0) return std::nullopt;
    const auto* p = static_cast<const std::byte*>(zmq_msg_data(&msg));
    Result<service::ServerMessage> m =
        service::decode_server_message(std::vector<std::byte>(p, p + zmq_msg_size(&msg)));
    zmq_msg_close(&msg);
    if (!m.is_ok()) return std::nullopt;
    return std::move(m).value();
  }
  // Sends one request and waits for its answer.
  std::optional<service::ServerMessage> ask(uint64_t id, service::Op op, uint32_t version = 1) {
    if (!send(service::encode_request(service::Request{version, id, std::move(op)}))) {
      return std::nullopt;
    }
    return receive(kAnswerWaitMs);
  }

 private:
  void* ctx_;
  void* sock_;
};

const service::ErrorReply* error_of(const std::optional<service::ServerMessage>& m) {
  return m ? std::get_if<service::ErrorReply>(&*m) : nullptr;
}

void note(AttackResult& r, std::string problem) {
  if (r.problems.size() < 5) r.problems.push_back(std::move(problem));
}

}  // namespace

AttackResult idle_connections(const AttackTarget& t) {
  AttackResult r{"idle_connections"};
  const std::string path = t.endpoint.substr(std::string("ipc://").size());
  // Past the connection budget, so the daemon must refuse some at accept.
  const uint32_t burst = t.connection_budget + 128;
  // The other attacks connect first: once the bursts hold every slot, attacks that connect
  // anew get in only between bursts (on a loaded machine a burst's connects take seconds).
  pause(t, milliseconds(1000));
  while (running(t)) {
    std::vector<int> fds;
    const auto burst_end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (uint32_t i = 0; i < burst && running(t) && std::chrono::steady_clock::now() < burst_end;
         ++i) {
      const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) break;  // this process's own limit: hold what there is
      // A blocking connect waits while the listener's backlog is full (up to a second).
      const timeval wait{1, 0};
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof(wait));
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        ::close(fd);
        continue;
      }
      fds.push_back(fd);
      ++r.actions;
    }
    // Held silent past the hello timeout: the daemon shuts each down on its own.
    pause(t, t.hello_timeout + milliseconds(500));
    for (int fd : fds) ::close(fd);
  }
  return r;
}

AttackResult refused_hellos(const AttackTarget& t) {
  AttackResult r{"refused_hellos"};
  while (running(t)) {
    RawDealer peer(t.endpoint);  // a new peer every few tries
    for (uint64_t id = 1; id <= 20 && running(t); ++id) {
      service::Hello h{{1}, "hostile-hello"};
      if (id % 2 == 0) {
        h.versions = {99};
      } else {
        h.runtime = t.guarded_runtime;
        h.token = "not-the-token";
      }
      auto m = peer.ask(id, h);
      ++r.actions;
      if (m && !error_of(m)) {
        note(r, "a hello without a common version or with a wrong token was accepted");
      }
      pause(t, milliseconds(5));
    }
  }
  return r;
}

AttackResult flood(const AttackTarget& t) {
  AttackResult r{"flood"};
  std::mt19937_64 rng(t.seed * 31 + 1);
  service::Lookup heavy;
  for (int i = 0; i < 256; ++i) heavy.keys.push_back(Key{7, rng()});
  while (running(t)) {
    RawDealer peer(t.endpoint);
    if (!peer.ask(1, service::Hello{{1}, "hostile-flood"})) continue;
    // Never reads a reply: its queue fills and the rest are refused unread; the backlog is
    // discarded when it leaves.
    for (uint64_t id = 2; id < 600 && running(t); ++id) {
      if (!peer.send(service::encode_request(service::Request{1, id, heavy}))) break;
      ++r.actions;
    }
    pause(t, milliseconds(50));
  }
  return r;
}

AttackResult garbage(const AttackTarget& t) {
  AttackResult r{"garbage"};
  const std::vector<std::byte> malformed = {std::byte{0xc1}, std::byte{0x00}};
  const std::vector<std::byte> oversized(3 << 19, std::byte{0x90});
  while (running(t)) {
    RawDealer peer(t.endpoint);
    std::vector<std::byte> hello =
        service::encode_request(service::Request{1, 1, service::Hello{{1}, "hostile-garbage"}});
    const std::vector<std::vector<std::byte>> bad = {
        malformed, std::vector<std::byte>(hello.begin(), hello.end() - 3), oversized};
    for (const auto& m : bad) {
      peer.send(m);
      auto answer = peer.receive(kAnswerWaitMs);
      ++r.actions;
      if (answer && !error_of(answer)) note(r, "a malformed message was not refused");
    }
    // Two frames: refused as a whole.
    peer.send(hello, /*more=*/true);
    peer.send(hello);
    ++r.actions;
    if (auto answer = peer.receive(kAnswerWaitMs); answer && !error_of(answer)) {
      note(r, "a two-frame message was not refused");
    }
    pause(t, milliseconds(20));
  }
  return r;
}

AttackResult write_hoarding(const AttackTarget& t) {
  AttackResult r{"write_hoarding"};
  while (running(t)) {
    RawDealer peer(t.endpoint);
    const uint32_t v = service::kOwnWritesVersion;
    if (!peer.ask(1, service::Hello{{v}, "hostile-writes"})) continue;
    // Reservations of the largest object, never put, until the session's quota refuses one.
    bool refused = false;
    for (uint64_t id = 2; id < 2000 && running(t) && !refused; ++id) {
      auto m = peer.ask(id, service::ReserveWrite{t.max_object_bytes}, v);
      ++r.actions;
      const auto* e = error_of(m);
      refused = e != nullptr;
      if (e && e->error.code() != StatusCode::kResourceExhausted) {
        note(r, "reserve_write refused with " + e->error.to_string());
      }
    }
    if (!refused && running(t)) note(r, "2000 reservations never put were all granted");
    pause(t, milliseconds(50));  // leaves: the daemon frees what it held
  }
  return r;
}

AttackResult step_edits(const AttackTarget& t) {
  AttackResult r{"step_edits"};
  const uint32_t v = service::kStepEditsVersion;
  using service::Step;
  // The lists' limit: an order grown past it by edits must be refused.
  const uint64_t limit = std::max<uint64_t>(service::kMaxIdList, t.max_requests_per_runtime);
  const std::vector<uint64_t> repeated(service::kMaxIdList, 1);
  while (running(t)) {
    RawDealer peer(t.endpoint);
    if (!peer.ask(1, service::Hello{{v}, "hostile-step-edits"})) continue;
    uint64_t id = 2, seq = 0;
    auto send = [&](Step s) {
      return peer.send(service::encode_request(service::Request{v, id++, std::move(s)}));
    };
    // A step in full (one request queued and waiting), then one bad edit of it: each bad edit
    // must come back as an error reply.
    const std::vector<Step> bad = {
        Step{.base = 1000000},            // a base never sent
        Step{.decoders_gone = {424242}},  // a decoder that is none
        Step{.waiting_taken = 1u << 30},  // more taken than waiting
    };
    for (const Step& b : bad) {
      if (!running(t)) break;
      send(Step{.seq = ++seq, .queued = {RequestInfo{seq, 1024, 0, 0, 8}}, .waiting = {seq}});
      Step edit = b;
      edit.seq = ++seq;
      if (!edit.base) edit.base = seq - 1;
      send(edit);
      ++r.actions;
      auto answer = peer.receive(kAnswerWaitMs);
      if (!error_of(answer)) note(r, "a step's edits that do not fit were not refused");
    }
    // An order grown by repeating one id, a list's worth per step, until past the limit.
    send(Step{.seq = ++seq, .waiting = {1}});
    bool refused = false;
    for (uint64_t size = 1; running(t) && !refused && size <= limit; size += repeated.size()) {
      Step grow{.seq = ++seq, .base = seq - 1, .waiting_new = repeated};
      send(grow);
      ++r.actions;
      refused = error_of(peer.receive(size + repeated.size() > limit ? kAnswerWaitMs : 50));
    }
    if (running(t) && !refused) note(r, "steps grew the order past its limit");
    pause(t, milliseconds(20));
  }
  return r;
}

}  // namespace tempokv::cli
