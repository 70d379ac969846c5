// WriteBehindPublisher: publishes objects put locally to the cluster asynchronously
// (docs/cluster.md, "Tiers"). publish() never blocks and never fails the caller: it queues the
// object when the bytes queued stay within the bound, else drops it and counts the drop
// (backpressure lands on the publisher, not on the engine's put). One worker thread owns a
// RemoteClient and puts the queue in order; a failed put is counted and the object dropped.
//
// publish(), stats() and flush() are thread-safe; the payload's keep_alive is held until its put
// has ended, so the caller's buffer stays valid without a copy.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <thread>

#include "remote/remote_client.h"

namespace tempokv::remote {

struct PublisherStats {
  uint64_t queued_bytes = 0;  // accepted, not yet put
  uint64_t published = 0;     // puts the cluster acknowledged
  uint64_t published_bytes = 0;
  uint64_t dropped_full = 0;  // refused because the bound would have been passed
  uint64_t failed = 0;        // puts that failed (node down, OOM, timeout)
};

class WriteBehindPublisher {
 public:
  // bound_bytes: the most payload bytes queued at once (above zero). The worker starts at
  // start(), so that a caller (or a test) can fill the queue first.
  WriteBehindPublisher(RemoteConfig config, uint64_t bound_bytes);
  ~WriteBehindPublisher();  // stops the worker; objects still queued are dropped, not put
  WriteBehindPublisher(const WriteBehindPublisher&) = delete;
  WriteBehindPublisher& operator=(const WriteBehindPublisher&) = delete;

  void start();
  // true when queued. keep_alive owns the payload's memory until the put has ended.
  bool publish(const RemoteIdentity& id, std::span<const unsigned char> payload,
               std::shared_ptr<const void> keep_alive);
  // Waits until the queue is empty and no put is running, or the timeout passed (false).
  bool flush(std::chrono::milliseconds timeout);
  PublisherStats stats() const;

 private:
  struct Item {
    RemoteIdentity id;
    std::span<const unsigned char> payload;
    std::shared_ptr<const void> keep_alive;
  };
  void run();

  RemoteConfig config_;
  const uint64_t bound_bytes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool busy_ = false;
  bool stop_ = false;
  PublisherStats stats_;
  std::thread worker_;
};

}  // namespace tempokv::remote
