// ClientSocket over cppzmq. Every cppzmq call that can throw is wrapped here: no exception leaves
// this file.
#include "client/client_socket.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <zmq.hpp>

namespace tempokv::service {

struct ClientSocket::Zmq {
  zmq::context_t context{1};
  // Declared after the context so it is closed before the context terminates.
  zmq::socket_t socket{context, zmq::socket_type::dealer};
};

namespace {

Status zmq_failure(const zmq::error_t& e, const std::string& what, const std::string& endpoint) {
  return Status::unavailable(what + " on " + endpoint + ": " + e.what());
}

}  // namespace

ClientSocket::ClientSocket(std::unique_ptr<Zmq> zmq, std::string endpoint, int fd, int wake_fd)
    : zmq_(std::move(zmq)), endpoint_(std::move(endpoint)), fd_(fd), wake_fd_(wake_fd) {}

ClientSocket::~ClientSocket() {
  if (wake_fd_ >= 0) close(wake_fd_);
}

Result<std::unique_ptr<ClientSocket>> ClientSocket::open(const std::string& endpoint) {
  try {
    auto z = std::make_unique<Zmq>();
    // Linger 0: closing must never wait for a daemon that is gone.
    z->socket.set(zmq::sockopt::linger, 0);
    // Queue only on a live connection: a request to a daemon that is down fails instead of
    // waiting for one that may come back as another instance.
    z->socket.set(zmq::sockopt::immediate, 1);
    z->socket.connect(endpoint);
    const int fd = z->socket.get(zmq::sockopt::fd);
    const int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd < 0) return Status::from_errno(errno, "eventfd for the client socket");
    return std::unique_ptr<ClientSocket>(new ClientSocket(std::move(z), endpoint, fd, wake_fd));
  } catch (const zmq::error_t& e) {
    if (e.num() == EINVAL || e.num() == EPROTONOSUPPORT) {
      return Status::invalid_argument("endpoint '" + endpoint + "': " + e.what());
    }
    return zmq_failure(e, "connect", endpoint);
  }
}

Status ClientSocket::send(std::span<const std::byte> payload, std::chrono::milliseconds timeout) {
  try {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point deadline = Clock::now() + timeout;
    for (;;) {
      zmq::send_result_t sent = zmq_->socket.send(
          zmq::const_buffer(payload.data(), payload.size()), zmq::send_flags::dontwait);
      if (sent) return Status::ok();
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      if (left <= std::chrono::milliseconds::zero()) break;
      zmq_pollitem_t item{zmq_->socket.handle(), 0, ZMQ_POLLOUT, 0};
      try {
        zmq::poll(&item, 1, left);
      } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) throw;
      }
    }
    return Status::unavailable("tempokvd at " + endpoint_ +
                               " is not reachable (no connection took the request within " +
                               std::to_string(timeout.count()) + " ms)");
  } catch (const zmq::error_t& e) {
    return zmq_failure(e, "send", endpoint_);
  }
}

Result<std::optional<std::vector<std::byte>>> ClientSocket::receive(
    std::chrono::milliseconds timeout) {
  try {
    if (timeout > std::chrono::milliseconds::zero()) {
      zmq_pollitem_t item{zmq_->socket.handle(), 0, ZMQ_POLLIN, 0};
      int ready = 0;
      try {
        ready = zmq::poll(&item, 1, timeout);
      } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) throw;
        // A signal: report nothing yet; the caller waits again with the time it has left.
      }
      if (ready == 0) return std::optional<std::vector<std::byte>>();
    }
    zmq::message_t msg;
    if (!zmq_->socket.recv(msg, zmq::recv_flags::dontwait)) {
      return std::optional<std::vector<std::byte>>();
    }
    if (msg.more()) {
      size_t frames = 1;
      while (msg.more() && zmq_->socket.recv(msg, zmq::recv_flags::dontwait)) ++frames;
      return Status::invalid_argument("tempokvd at " + endpoint_ + " sent a message of " +
                                      std::to_string(frames) +
                                      "+ frames; the protocol has one frame per message");
    }
    std::vector<std::byte> out(msg.size());
    if (!out.empty()) std::memcpy(out.data(), msg.data(), msg.size());
    return std::optional<std::vector<std::byte>>(std::move(out));
  } catch (const zmq::error_t& e) {
    return zmq_failure(e, "receive", endpoint_);
  }
}

void ClientSocket::wait(std::chrono::milliseconds timeout) const {
  pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  (void)poll(fds, 2, static_cast<int>(std::max<int64_t>(0, timeout.count())));
}

void ClientSocket::wake() const {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

void ClientSocket::clear_wake() const {
  uint64_t n = 0;
  (void)!read(wake_fd_, &n, sizeof(n));
}

bool ClientSocket::readable() {
  try {
    return (zmq_->socket.get(zmq::sockopt::events) & ZMQ_POLLIN) != 0;
  } catch (const zmq::error_t&) {
    return false;  // a socket in error has nothing to read; the next call reports the failure
  }
}

}  // namespace tempokv::service
