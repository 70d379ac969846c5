// ClientSocket: ServiceClient's transport, one ZeroMQ DEALER socket connected to tempokvd's
// ROUTER. One message is one frame holding one MessagePack map (docs/protocol.md, Framing); the
// ROUTER adds and strips the identity frame, so this side sends and receives bare payloads.
//
// It keeps libzmq out of the public client header and turns cppzmq's exceptions into Status at
// this boundary. Sends wait at most their timeout for a connection (none: Unavailable). The
// socket closes with ZMQ_LINGER 0: messages not yet sent are dropped, closing never waits for
// the daemon.
//
// Waiting without holding the socket: wait() sleeps until fd() signals a change of the socket's
// state (a message, a connection), wake() is called, or the timeout passes; it touches only
// descriptors, so one thread may wait while another uses the socket. A signal consumed by the
// other thread's use is covered by waking it (wake()) or by the timeout.
//
// Ownership: owns its context, socket and wake descriptor. Threading: the socket one thread at a
// time (ZeroMQ sockets are not thread-safe); wait() and wake() from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tempokv/status.h"

namespace tempokv::service {

class ClientSocket {
 public:
  // Connects asynchronously: a daemon that is not there yet is found when it binds.
  static Result<std::unique_ptr<ClientSocket>> open(const std::string& endpoint);
  ~ClientSocket();
  ClientSocket(const ClientSocket&) = delete;
  ClientSocket& operator=(const ClientSocket&) = delete;

  // Hands the message to a live connection, waiting up to `timeout` for one (ZMQ_IMMEDIATE: a
  // daemon that is down is Unavailable, not a queue that fills while nobody reads it).
  Status send(std::span<const std::byte> payload,
              std::chrono::milliseconds timeout = std::chrono::milliseconds::zero());
  // One message, waiting up to `timeout` (zero: only what is already here); nullopt when none
  // came. A multi-frame message is refused (after its frames are drained).
  Result<std::optional<std::vector<std::byte>>> receive(std::chrono::milliseconds timeout);
  // Whether a message can be received now (ZMQ_EVENTS). Reading ZMQ_EVENTS is also what re-arms
  // fd(): it signals again only after a call here found nothing left.
  bool readable();
  // ZMQ_FD: readable when the socket's state changed, not while messages are queued.
  int fd() const { return fd_; }
  // Sleeps until fd() signals, wake() was called since the last clear_wake(), or `timeout`.
  void wait(std::chrono::milliseconds timeout) const;
  void wake() const;
  void clear_wake() const;
  const std::string& endpoint() const { return endpoint_; }

 private:
  struct Zmq;  // context and socket
  ClientSocket(std::unique_ptr<Zmq> zmq, std::string endpoint, int fd, int wake_fd);

  std::unique_ptr<Zmq> zmq_;
  std::string endpoint_;
  int fd_ = -1;
  int wake_fd_ = -1;  // an eventfd
};

}  // namespace tempokv::service
