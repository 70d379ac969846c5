#include "eval/fleet_writer.h"

#include <memory>

#include "tempokv/client.h"
#include "workload/tokens.h"

namespace tempokv {

FleetWriter::FleetWriter(std::vector<std::string> endpoints) : endpoints_(std::move(endpoints)) {
  thread_ = std::thread([this] { loop(); });
}

FleetWriter::~FleetWriter() { (void)stop(); }

void FleetWriter::enqueue(uint32_t engine, std::vector<CachedChunk> chunks) {
  if (chunks.empty()) return;
  {
    std::lock_guard lock(mu_);
    queue_.emplace_back(engine, std::move(chunks));
  }
  cv_.notify_one();
}

Status FleetWriter::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  return error_;
}

FleetWriterStats FleetWriter::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void FleetWriter::loop() {
  std::vector<std::unique_ptr<ServiceClient>> clients;
  for (size_t k = 0; k < endpoints_.size(); ++k) {
    ClientOptions co;
    co.endpoint = endpoints_[k];
    co.name = "fleet-writer-" + std::to_string(k);
    co.call_timeout = std::chrono::seconds(30);
    co.lookup_timeout = co.call_timeout;  // a writer's lookup must be answered, not skipped
    Result<std::unique_ptr<ServiceClient>> c = ServiceClient::connect(co);
    if (!c.is_ok()) {
      std::lock_guard lock(mu_);
      if (error_.is_ok()) error_ = c.status();
      clients.push_back(nullptr);
      continue;
    }
    clients.push_back(std::move(c).value());
  }
  std::vector<std::byte> bytes;
  for (;;) {
    std::pair<uint32_t, std::vector<CachedChunk>> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) break;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    ServiceClient* client = job.first < clients.size() ? clients[job.first].get() : nullptr;
    FleetWriterStats add;
    std::vector<Key> keys;
    for (const CachedChunk& c : job.second) keys.push_back(c.key);
    Result<std::vector<uint64_t>> sizes =
        client ? client->lookup(keys) : Result<std::vector<uint64_t>>(Status::unavailable("no"));
    if (!sizes.is_ok()) {
      add.failures += job.second.size();
    } else {
      for (size_t i = 0; i < job.second.size(); ++i) {
        const CachedChunk& c = job.second[i];
        if ((*sizes)[i] != 0) {
          ++add.skipped;
          continue;
        }
        bytes.resize(c.bytes);
        fill_chunk_bytes(c.key, bytes);
        if (client->put(c.key, c.tokens, bytes).is_ok()) {
          ++add.puts;
          add.bytes += c.bytes;
        } else {
          ++add.failures;
        }
      }
    }
    std::lock_guard lock(mu_);
    stats_.puts += add.puts;
    stats_.bytes += add.bytes;
    stats_.skipped += add.skipped;
    stats_.failures += add.failures;
  }
  for (auto& c : clients) {
    if (c) (void)c->bye();
  }
}

}  // namespace tempokv
