// FakeDaemon: a scripted stand-in for tempokvd in the client's tests. A ZeroMQ ROUTER bound to
// an ephemeral TCP port, served by its own thread: every request is decoded with the real codec,
// recorded, and handed to the test's handler, which answers with the encode_* functions (or
// not at all). Unhandled requests get the default answer: the hello result for hello, {} else.
//
// Ownership: owns its socket and thread; the destructor stops and joins it. Threading: the
// handler and send() run on the daemon's thread; push(), requests() and endpoint() on any.
#pragma once

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "tempokv/protocol.h"

namespace tempokv {

class FakeDaemon {
 public:
  // Returns true when it dealt with the request (answered, or chose silence).
  using Handler = std::function<bool(FakeDaemon&, const service::Request&)>;

  explicit FakeDaemon(service::HelloResult hello = {}, Handler handler = {})
      : hello_(std::move(hello)), handler_(std::move(handler)) {
    router_.set(zmq::sockopt::linger, 0);
    router_.bind("tcp://127.0.0.1:*");
    endpoint_ = router_.get(zmq::sockopt::last_endpoint);
    // Handed to the thread here and used only there (thread start orders the accesses).
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeDaemon() {
    stop_ = true;
    thread_.join();
  }
  FakeDaemon(const FakeDaemon&) = delete;
  FakeDaemon& operator=(const FakeDaemon&) = delete;

  const std::string& endpoint() const { return endpoint_; }

  // Daemon thread: sends one message to the client that sent the last request.
  void send(const std::vector<std::byte>& payload) {
    router_.send(zmq::buffer(identity_), zmq::send_flags::sndmore);
    router_.send(zmq::const_buffer(payload.data(), payload.size()), zmq::send_flags::none);
  }
  // Any thread: the daemon thread sends it on its next turn (unrequested notifications).
  void push(std::vector<std::byte> payload) {
    std::lock_guard<std::mutex> lock(mu_);
    outbox_.push_back(std::move(payload));
  }
  std::vector<service::Request> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  const service::HelloResult& hello() const { return hello_; }

 private:
  void serve() {
    while (!stop_) {
      std::vector<std::vector<std::byte>> out;
      {
        std::lock_guard<std::mutex> lock(mu_);
        out.swap(outbox_);
      }
      for (const auto& m : out) send(m);
      zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(2)) == 0) continue;
      zmq::message_t id, payload;
      if (!router_.recv(id) || !router_.recv(payload)) continue;
      identity_.assign(static_cast<const char*>(id.data()), id.size());
      Result<service::Request> req =
          service::decode_request({static_cast<const std::byte*>(payload.data()), payload.size()});
      if (!req.is_ok()) {
        send(service::encode_error(std::nullopt, req.status()));
        continue;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(*req);
      }
      if (handler_ && handler_(*this, *req)) continue;
      if (std::holds_alternative<service::Hello>(req->op)) {
        send(service::encode_hello_reply(req->id, hello_));
      } else {
        send(service::encode_reply(req->id));
      }
    }
  }

  service::HelloResult hello_;
  Handler handler_;
  zmq::context_t context_{1};
  zmq::socket_t router_{context_, zmq::socket_type::router};
  std::string endpoint_;
  std::string identity_;  // daemon thread only
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;  // guards outbox_ and requests_
  std::vector<std::vector<std::byte>> outbox_;
  std::vector<service::Request> requests_;
  std::thread thread_;
};

}  // namespace tempokv
