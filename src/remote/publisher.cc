#include "remote/publisher.h"

namespace tempokv::remote {

WriteBehindPublisher::WriteBehindPublisher(RemoteConfig config, uint64_t bound_bytes)
    : config_(std::move(config)), bound_bytes_(bound_bytes) {}

WriteBehindPublisher::~WriteBehindPublisher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void WriteBehindPublisher::start() {
  if (!worker_.joinable()) worker_ = std::thread([this] { run(); });
}

bool WriteBehindPublisher::publish(const RemoteIdentity& id, std::span<const unsigned char> payload,
                                   std::shared_ptr<const void> keep_alive) {
  {
    std::lock_guard lock(mu_);
    if (stats_.queued_bytes + payload.size() > bound_bytes_) {
      ++stats_.dropped_full;
      return false;
    }
    stats_.queued_bytes += payload.size();
    queue_.push_back({id, payload, std::move(keep_alive)});
  }
  cv_.notify_all();
  return true;
}

bool WriteBehindPublisher::flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return queue_.empty() && !busy_; });
}

PublisherStats WriteBehindPublisher::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void WriteBehindPublisher::run() {
  RemoteClient client(config_);
  bool connected = false;
  for (;;) {
    Item item;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      item = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    // The slot map is loaded lazily, and again after a failure (a cluster not up yet).
    if (!connected) connected = client.connect().is_ok();
    const bool ok = connected && client.put(item.id, item.payload).is_ok();
    connected = connected && ok;
    item.keep_alive.reset();  // before flush() can see the put as ended
    {
      std::lock_guard lock(mu_);
      stats_.queued_bytes -= item.payload.size();
      if (ok) {
        ++stats_.published;
        stats_.published_bytes += item.payload.size();
      } else {
        ++stats_.failed;
      }
      busy_ = false;
    }
    cv_.notify_all();
  }
}

}  // namespace tempokv::remote
