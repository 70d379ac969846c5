// ServiceClient on a RealExecutor: dispatch when the socket signals or a call left work behind,
// and heartbeats while the runtime has nothing to say (docs/protocol.md, Sessions).
#include <sys/epoll.h>

#include <algorithm>

#include "client/client_socket.h"
#include "executor/real_executor.h"
#include "tempokv/client.h"

namespace tempokv {

Status ServiceClient::attach(RealExecutor& executor) {
  if (closed_) return Status::failed_precondition("attach: the client is closed (bye was sent)");
  if (executor_ != nullptr) return Status::failed_precondition("attach: already attached");
  // ZMQ_FD is level-readable until ZMQ_EVENTS is read, which dispatch() always does last, so the
  // executor's level-triggered watch does not spin.
  TEMPOKV_RETURN_IF_ERROR(executor.watch(fd(), EPOLLIN, [this](uint32_t) { dispatch(); }));
  executor_ = &executor;
  last_sent_ = executor.now();
  arm_heartbeat();
  // Messages that arrived before the watch may never make fd() fire again.
  schedule_dispatch();
  return Status::ok();
}

void ServiceClient::detach() {
  if (executor_ == nullptr) return;
  heartbeat_timer_.cancel();
  static_cast<void>(executor_->unwatch(fd()));
  executor_ = nullptr;
  // Dispatches already posted belong to this attachment: they must find it gone.
  *alive_ = false;
  alive_ = std::make_shared<bool>(true);
  dispatch_posted_ = false;
}

void ServiceClient::schedule_dispatch() {
  if (executor_ == nullptr || dispatch_posted_ || !has_pending()) return;
  dispatch_posted_ = true;
  executor_->post([this, alive = alive_] {
    if (!*alive) return;
    dispatch_posted_ = false;
    dispatch();
  });
}

Duration ServiceClient::heartbeat_interval() const {
  return std::chrono::milliseconds(hello_.heartbeat_timeout_ms) / 3;
}

void ServiceClient::arm_heartbeat() {
  const Duration interval = heartbeat_interval();
  if (executor_ == nullptr || interval <= Duration::zero()) return;
  // From now at the earliest: a heartbeat that failed to send must not re-fire at once.
  const TimePoint due = std::max(last_sent_, executor_->now()) + interval;
  heartbeat_timer_ = executor_->at(due, [this] { on_heartbeat_timer(); });
}

void ServiceClient::on_heartbeat_timer() {
  if (executor_ == nullptr || closed_) return;
  if (executor_->now() - last_sent_ >= heartbeat_interval()) {
    // A failure here (daemon gone) shows again in the runtime's next call, which reports it.
    static_cast<void>(heartbeat());
  }
  arm_heartbeat();
}

}  // namespace tempokv
