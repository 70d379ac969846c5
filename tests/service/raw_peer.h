// A raw ZeroMQ DEALER speaking to a real tempokvd without the client library, for tests that
// send what a well-behaved client never would, and helpers to build and check messages.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zmq.h>

#include <string>
#include <vector>

#include "tempokv/protocol.h"

namespace tempokv::testing {

class RawPeer {
 public:
  // linger_ms: how long closing waits for messages not yet sent (-1: until they are).
  explicit RawPeer(const std::string& endpoint, int linger_ms = 0) {
    ctx_ = zmq_ctx_new();
    sock_ = zmq_socket(ctx_, ZMQ_DEALER);
    int linger = linger_ms;
    zmq_setsockopt(sock_, ZMQ_LINGER, &linger, sizeof(linger));
    int timeout = 5000;
    zmq_setsockopt(sock_, ZMQ_RCVTIMEO, &timeout, sizeof(timeout));
    zmq_connect(sock_, endpoint.c_str());
  }
  ~RawPeer() {
    zmq_close(sock_);
    zmq_ctx_term(ctx_);
  }
  // Sends frames and returns the decoded answer.
  Result<service::ServerMessage> ask(const std::vector<std::vector<std::byte>>& frames) {
    for (size_t i = 0; i < frames.size(); ++i) {
      zmq_send(sock_, frames[i].data(), frames[i].size(), i + 1 < frames.size() ? ZMQ_SNDMORE : 0);
    }
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, sock_, 0) < 0) return Status::unavailable("no answer");
    const auto* p = static_cast<const std::byte*>(zmq_msg_data(&msg));
    std::vector<std::byte> bytes(p, p + zmq_msg_size(&msg));
    zmq_msg_close(&msg);
    return service::decode_server_message(bytes);
  }
  Result<service::ServerMessage> ask(const std::vector<std::byte>& one) {
    return ask(std::vector<std::vector<std::byte>>{one});
  }
  // Sends one message without waiting for an answer; false when it would block (unless wait).
  bool send(const std::vector<std::byte>& one, bool wait = false) {
    return zmq_send(sock_, one.data(), one.size(), wait ? 0 : ZMQ_DONTWAIT) >= 0;
  }
  // The next message from the daemon, waiting at most wait_ms (Unavailable when none came).
  Result<service::ServerMessage> receive(int wait_ms = 5000) {
    zmq_pollitem_t item{sock_, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, wait_ms) <= 0) return Status::unavailable("no answer");
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, sock_, ZMQ_DONTWAIT) < 0) return Status::unavailable("no answer");
    const auto* p = static_cast<const std::byte*>(zmq_msg_data(&msg));
    std::vector<std::byte> bytes(p, p + zmq_msg_size(&msg));
    zmq_msg_close(&msg);
    return service::decode_server_message(bytes);
  }

 private:
  void* ctx_;
  void* sock_;
};

inline void expect_error(const Result<service::ServerMessage>& m, StatusCode code,
                  const std::string& text) {
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  const auto* e = std::get_if<service::ErrorReply>(&*m);
  ASSERT_NE(e, nullptr) << "not an error reply";
  EXPECT_EQ(e->error.code(), code) << e->error.to_string();
  EXPECT_THAT(e->error.message(), ::testing::HasSubstr(text));
}

inline std::vector<std::byte> request(uint64_t id, service::Op op, uint32_t v = 1) {
  return service::encode_request(service::Request{v, id, std::move(op)});
}

}  // namespace tempokv::testing
