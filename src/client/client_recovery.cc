// ServiceClient's recovery (client.h, Recovery): the hello, saying it again when the daemon lost
// the session, and the background heartbeat that keeps an idle session alive and notices a
// daemon that is down or restarted.
#include <algorithm>
#include <chrono>

#include "client/client_socket.h"
#include "tempokv/client.h"

namespace tempokv {

using service::Reply;

bool ServiceClient::session_gone(const Status& st) {
  // The daemon's answer to a request of a peer without a session (docs/protocol.md, Errors).
  return st.code() == StatusCode::kFailedPrecondition &&
         st.message().find("has not said hello") != std::string::npos;
}

service::Hello ServiceClient::hello_request() const {
  service::Hello hello{.client = options_.name,
                       .runtime = options_.runtime,
                       .max_active = options_.max_active,
                       .ranks = options_.ranks,
                       .token = options_.token,
                       .token_budget = options_.token_budget,
                       .async_loads = options_.async_loads};
  for (uint32_t v = service::kMinProtocolVersion; v <= service::kProtocolVersion; ++v) {
    hello.versions.push_back(v);
  }
  return hello;
}

Result<service::HelloResult> ServiceClient::say_hello() {
  // The hello is always written in version 1 (docs/protocol.md: the envelope and hello are
  // frozen), whatever is negotiated.
  service::Request hello{.version = 1, .op = hello_request()};
  {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    hello.id = next_id_++;
  }
  TEMPOKV_ASSIGN_OR_RETURN(Reply reply, exchange(hello));
  if (!reply.hello) {
    return Status::internal("tempokvd at " + options_.endpoint +
                            " answered hello without a hello result");
  }
  const uint32_t v = reply.hello->version;
  if (v < service::kMinProtocolVersion || v > service::kProtocolVersion) {
    return Status::failed_precondition("tempokvd at " + options_.endpoint + " picked version " +
                                       std::to_string(v) + ", which this client does not speak");
  }
  return std::move(*reply.hello);
}

Status ServiceClient::recover() {
  session_lost_ = false;
  Result<service::HelloResult> hello = say_hello();
  if (!hello.is_ok()) {
    session_lost_ = true;  // the next call tries again
    return Status(hello.status().code(), "tempokvd at " + options_.endpoint +
                                             " lost this client's session and a new hello "
                                             "failed: " + hello.status().message());
  }
  const bool restarted = hello->instance != hello_.instance ||
                         hello->tier_path != hello_.tier_path ||
                         hello->write_path != hello_.write_path;
  {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    hello_ = std::move(hello).value();
    version_ = hello_.version;
  }
  heartbeat_interval_ms_ = int64_t(hello_.heartbeat_timeout_ms / 3);
  ++recoveries_;
  if (restarted && options_.map_shared_memory) {
    tier_ = service::ClientMapping();
    std::lock_guard<std::recursive_mutex> lock(mu_);
    write_.reset();
    write_path_.clear();
    TEMPOKV_RETURN_IF_ERROR(map_shared_memory());
  }
  // Whatever the daemon held for the old session is gone: every claim here fails.
  const Status lost = Status::unavailable(
      std::string("claim lost: tempokvd ") +
      (restarted ? "restarted" : "ended this client's session") +
      "; the daemon no longer knows its request");
  for (auto& [id, claim] : claims_) {
    if (claim.waiting) {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      notifications_.push_back(service::ReadyNotification{id, lost, {}});
    } else {
      claim.ready = false;
      claim.objects.clear();
      claim.lost = lost;
    }
  }
  return Status::ok();
}

void ServiceClient::start_heartbeat_thread() {
  stopping_ = false;
  heartbeat_thread_ = std::thread([this] { heartbeat_loop(); });
}

void ServiceClient::stop_heartbeat_thread() {
  if (!heartbeat_thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  heartbeat_thread_.join();
}

void ServiceClient::heartbeat_loop() {
  using Clock = std::chrono::steady_clock;
  using std::chrono::milliseconds;
  // Heartbeats keep an idle session; probes find a daemon that stopped answering while a call
  // waits (a put in flight when it died): each is answered at once by a daemon that is up,
  // whatever the call waits for.
  Clock::time_point last_probe{};
  std::unique_lock<std::mutex> stop_lock(stop_mu_);
  while (!stopping_) {
    const int64_t ms = heartbeat_interval_ms_.load();
    if (ms <= 0) {  // a daemon without a heartbeat timeout needs none
      stop_cv_.wait_for(stop_lock, std::chrono::seconds(1), [this] { return stopping_; });
      continue;
    }
    const auto interval = milliseconds(ms);
    const auto probe_after = std::min<Clock::duration>(interval, std::chrono::seconds(1));
    Clock::time_point last;
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      last = last_request_;
    }
    const int64_t since_ns = call_waiting_since_ns_.load();
    const Clock::time_point waiting_since{std::chrono::nanoseconds(since_ns)};
    const Clock::time_point now = Clock::now();
    const bool idle = now - last >= interval;
    const bool overdue = since_ns != 0 && now - waiting_since >= probe_after &&
                         now - last_probe >= probe_after;
    if (!idle && !overdue) {
      // Until the next heartbeat is due, looking again at least every 100 ms for a call that
      // started waiting meanwhile.
      const Clock::time_point due =
          std::clamp(last + interval, now + milliseconds(10), now + milliseconds(100));
      stop_cv_.wait_until(stop_lock, due, [this] { return stopping_; });
      continue;
    }
    stop_lock.unlock();
    service::Request request{.op = service::Heartbeat{}};
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      request.version = version_;
      request.id = next_id_++;
    }
    // Not counted in calls(): the runtime's thread does not pay for it. A daemon without a
    // connection is not waited for (down at once); one that stays silent is down after an
    // interval (a third of its heartbeat timeout), however long the call in flight may wait.
    const Result<Reply> reply = exchange_once(request, interval, /*wait_for_connection=*/false,
                                              /*caller=*/false);
    last_probe = Clock::now();
    if (reply.is_ok()) {
      daemon_down_ = false;
    } else if (session_gone(reply.status())) {
      daemon_down_ = false;
      session_lost_ = true;
      ++lost_epoch_;
      socket_->wake();
    } else if (reply.status().code() == StatusCode::kUnavailable) {
      daemon_down_ = true;
      ++down_epoch_;
      socket_->wake();
    }
    stop_lock.lock();
  }
}

}  // namespace tempokv
