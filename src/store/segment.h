// Segment: the in-memory state of one segment file of the log, and the blocking file operations
// that create, open and delete segment files.
//
// Owned by StoreImpl (one per live segment, keyed by id); loop thread only. Invariants:
//   * write_offset is 4 KiB-aligned and leaves room for the seal record: a record is placed only
//     when write_offset + record_bytes + kHeaderBytes <= bytes.
//   * state moves kActive -> kSealing -> kSealed, or to kRetired from kActive/kSealing after a
//     failed write or sync (an unsealed segment is fully verified at open, so a half-written record
//     in it is never served); any of kSealed/kRetired -> kReclaimed, after which the file is
//     deleted once readers == 0.
//   * keys lists every key whose record was indexed while living here (possibly replaced since);
//     reclamation checks the index entry's segment before evicting.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ssd/ssd_engine.h"
#include "store/file_ops.h"
#include "tempokv/key.h"
#include "tempokv/status.h"

namespace tempokv::store {

struct PendingWrite;  // a record on its way to disk (store_write.cc)

enum class SegmentState { kActive, kSealing, kSealed, kRetired, kReclaimed };

struct Segment {
  uint32_t id = 0;
  int fd = -1;       // -1 in simulated mode
  FileId file = 0;   // the engine's handle
  std::string path;  // empty in simulated mode
  uint64_t bytes = 0;
  uint64_t write_offset = 0;
  SegmentState state = SegmentState::kActive;
  bool failed = false;      // a write or sync failed: never seal
  // A sync failed: the kernel may have dropped pages written before it (a record's first piece,
  // its last written after) and a later fdatasync succeeds without them. Nothing written to the
  // segment and not durable by then is acknowledged any more.
  bool sync_failed = false;
  bool seal_issued = false;
  uint32_t readers = 0;     // gets in flight
  uint32_t writes_in_flight = 0;
  bool sync_in_flight = false;
  std::vector<PendingWrite*> unsynced;  // writes finished, waiting for the next sync
  std::vector<Key> keys;
  uint64_t records = 0;  // records placed here (for the seal's count)

  bool reclaimable() const {
    return (state == SegmentState::kSealed || state == SegmentState::kRetired) &&
           writes_in_flight == 0 && !sync_in_flight && unsynced.empty();
  }
};

// Creates dir/segment_file_name(id), preallocates `bytes` (fallocate), writes and syncs the
// segment header, and syncs the directory so the name survives a crash. On any failure the file is
// removed again; ENOSPC maps to ResourceExhausted. Returns the fd (O_DIRECT when direct).
// With a suffix the file is dir/segment_file_name(id) + suffix (a spare, renamed when used).
// capacity_bytes is recorded in the header (SegmentHeader::capacity_bytes). Every step goes
// through `files`.
Result<int> create_segment_file(FileOps& files, const std::string& dir, uint32_t id,
                                uint64_t bytes, uint64_t capacity_bytes, bool direct,
                                std::string_view suffix = {});
// Opens an existing segment file for reading and writing (reading only when read_only).
Result<int> open_segment_file(const std::string& path, bool direct, bool read_only = false);

}  // namespace tempokv::store
