// FleetWriter: the produced-KV writes of the real fleet (docs/fleet.md). An emulated engine in
// service mode has no writer of its own (ServingEngine puts nothing through the service), so the
// fleet watches its engines' records and, once a request's prefill has produced its first token,
// puts the chunks it computed into that engine's tempokvd, which publishes them to the cluster
// write-behind as it does any put. The puts run on a thread of their own, with one ServiceClient
// per daemon made and used there, so the engines' loop never waits for an SSD write; a chunk the
// daemon already finds (its store or the cluster) is not put again.
//
// Ownership: owns the thread and its clients. Threading: enqueue() and stop() from one thread
// (the engines' loop); the clients live on the writer thread only.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tempokv/status.h"
#include "workload/request.h"

namespace tempokv {

struct FleetWriterStats {
  uint64_t puts = 0;      // chunks put
  uint64_t bytes = 0;     // their payload bytes
  uint64_t skipped = 0;   // chunks the daemon already found
  uint64_t failures = 0;  // puts or lookups that failed (the chunk stays absent)
};

class FleetWriter {
 public:
  explicit FleetWriter(std::vector<std::string> endpoints);
  ~FleetWriter();
  FleetWriter(const FleetWriter&) = delete;
  FleetWriter& operator=(const FleetWriter&) = delete;

  // The chunks of `chunks` to put into daemon `engine`.
  void enqueue(uint32_t engine, std::vector<CachedChunk> chunks);
  // Puts what is queued, ends the clients' sessions and joins; the first connect error, if any.
  Status stop();
  FleetWriterStats stats() const;

 private:
  void loop();

  std::vector<std::string> endpoints_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<uint32_t, std::vector<CachedChunk>>> queue_;
  bool stopping_ = false;
  Status error_;
  FleetWriterStats stats_;
  std::thread thread_;
};

}  // namespace tempokv
