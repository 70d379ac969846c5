// PageCacheModel: what a power loss does to writes, for FaultInjectingEngine's power-loss mode.
// SIGKILL keeps the kernel's page cache, so a crash test that kills a process would pass with
// every fdatasync removed; this model forgets instead.
//
// A write is durable once a sync of its file, issued after the write completed, has completed
// successfully (and before the crash). Every other write is remembered with its pre-image (the
// bytes it overwrote, read before it was forwarded), and power_cut() gives each 4 KiB page of it
// a fate drawn from a seeded RNG: kept, lost (pre-image restored), or torn (any non-empty proper
// subset of its 512-byte sectors kept, in any position, the rest restored). A sync that fails makes the writes it covered
// un-durable for good, as Linux marks their pages clean after a failed writeback.
//
// Files are known by path (from /proc/self/fd at add_file), so power_cut() works after their
// owner closed and removed them; a file deleted meanwhile is skipped. Thread-safe (one mutex);
// the pre-image read is a blocking pread on the caller's thread (a test engine).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "ssd/ssd_engine.h"
#include "tempokv/status.h"

namespace tempokv {

class PageCacheModel {
 public:
  explicit PageCacheModel(uint64_t seed) : rng_(seed) {}

  void add_file(FileId file, int fd);
  // Before a write is forwarded: remembers its pre-image. Returns the write's id.
  Result<uint64_t> before_write(FileId file, uint64_t offset, size_t len);
  // The write completed (successfully or not); a sync issued from now on covers it.
  void write_done(uint64_t id);
  // When a sync is issued: the writes it covers. Then sync_done with the same list.
  std::vector<uint64_t> sync_issued(FileId file);
  void sync_done(const std::vector<uint64_t>& ids, bool ok);

  struct CutReport {
    uint64_t writes = 0;  // not durable at the cut
    uint64_t pages_kept = 0;
    uint64_t pages_lost = 0;
    uint64_t pages_torn = 0;
  };
  // Applies the power loss to the files: call only once no write is in flight. Forgets every
  // remembered write afterwards.
  Result<CutReport> power_cut();
  uint64_t undurable_writes() const;

 private:
  enum class State : uint8_t { kInFlight, kWritten, kSyncing, kNeverDurable };
  struct Write {
    std::string path;
    FileId file = 0;
    uint64_t offset = 0;
    std::vector<std::byte> pre_image;
    State state = State::kInFlight;
  };

  mutable std::mutex mu_;
  std::mt19937_64 rng_;
  std::map<FileId, std::string> paths_;
  std::map<uint64_t, Write> writes_;  // by id, in issue order; durable ones are erased
  uint64_t next_id_ = 1;
};

}  // namespace tempokv
