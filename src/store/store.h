// Store: the persistent SSD object store for KV chunks (DESIGN.md §2), on the Executor.
//
// Objects are addressed by Key and carry their TokenRange. On disk: a log of preallocated segment
// files of 4 KiB-aligned, self-describing records (docs/on-disk-format.md). The index is in memory
// and rebuilt at open by scanning; torn or corrupt records are skipped and counted, never served.
// get() reads a payload straight into the caller's aligned buffer (O_DIRECT, no copy) and verifies
// its XXH3-128 checksum off the control plane (on the engine's hook threads, several objects at
// once, never on the thread that reaps and resubmits reads); a mismatch is Corruption.
//
// Durability: put() completes only after its record is written and an fdatasync of its segment
// covering it has completed (syncs are batched per segment: puts whose writes finish while a sync
// is in flight share the next one). After a failed sync of a segment nothing more written to it is
// acknowledged (the kernel may have dropped pages written before that sync). Directory and header
// operations go through StoreOptions::file_ops (store/file_ops.h), so tests can cut power there.
//
// Capacity: when live segments exceed capacity_bytes the oldest sealed segment is reclaimed whole;
// its objects leave the index at once (listeners are told) but the file is deleted only when no
// read of it is in flight. Reclamation is strictly oldest-first; while the oldest segment is still
// sealing, the store may exceed capacity by one segment until the seal completes. open() never
// shrinks a store silently: one found above capacity_bytes is refused (naming both sizes) unless
// options.reclaim_at_open (counted in reclaimed_at_open_*), and open() deletes nothing else that
// holds data: a store one unsealed segment over the capacity recorded in its newest segment (a
// crash mid-seal) opens as it is and reclaims that segment when it next needs room; a newest
// segment whose header is lost but that holds data after it is quarantined, not removed.
//
// Damage: a payload that fails its checksum on get() leaves the index at once and for good (a
// tombstone), so the runtime recomputes instead of claiming it again. A segment whose header is
// corrupt is renamed to <name>.quarantine: never read, counted against capacity, reclaimed first.
//
// Read-only (options.read_only, for inspection): a shared lock (refused while a writer holds the
// store), no writes of any kind, no reclamation, no recovery that modifies files; put and remove
// fail with FailedPrecondition.
//
// Segment creation (fallocate, header write, fdatasync, directory fsync) runs on the store's
// creator thread, never the caller's: the next segment is created ahead (a spare, counted against
// capacity, made only when it fits without reclaiming) and writes that find no room wait for it.
// Everything else is asynchronous on the SsdEngine or the store's worker threads.
//
// Reads before writes: gets go to the SSD engine at once; writes wait in the store, in the order
// they became ready, while the engine already holds StoreOptions::write_bytes_in_flight of them
// (write_bytes_in_flight_while_reading while a get is in flight), one record always going.
//
// Simulated mode (options.simulated): the same index, capacity and reclamation logic, no files and
// no bytes; the SsdEngine (the simulated one) provides the time.
//
// Threading: every method is called on the Executor's thread; callbacks run there too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/checksum.h"
#include "ssd/ssd_engine.h"
#include "tempokv/executor.h"
#include "tempokv/key.h"
#include "tempokv/status.h"

namespace tempokv {
namespace store {
class FileOps;
}

struct StoreOptions {
  std::string dir;                        // directory of segment files (unused when simulated)
  uint64_t segment_bytes = 1ULL << 30;    // size each segment file is preallocated to
  uint64_t capacity_bytes = 64ULL << 30;  // bound on the bytes of all segments
  // Largest payload accepted by put: a record plus the segment header and seal fit one segment.
  uint64_t max_object_bytes = (1ULL << 30) - 3 * 4096;
  bool simulated = false;                 // no files, no bytes; index and timing only
  bool verify_reads = true;               // check the payload checksum on every get
  bool read_only = false;                 // inspect only: shared lock, no writes, no reclamation
  bool reclaim_at_open = false;           // cut a store found above capacity_bytes (oldest first)
  bool spare_segment = true;              // create the next segment ahead when capacity allows
  // Reads before writes: a record ready to be written waits in the store while the writes already
  // at the SSD engine and its own exceed this many bytes (one record at a time always goes, so
  // writes never starve), and while any get is at the engine the limit is
  // write_bytes_in_flight_while_reading. A get issued after a burst of puts then shares the device
  // with at most that much writing instead of queuing behind the whole burst.
  uint64_t write_bytes_in_flight = 64ULL << 20;
  uint64_t write_bytes_in_flight_while_reading = 0;  // 0: one record at a time
  // Tests: runs on the store's own threads before each piece of work done there ("prepare" a
  // large put, "create" or "publish" a segment), and on the engine's hook thread before a get's
  // checksum ("verify"), so a test can hold that work up.
  std::function<void(std::string_view what)> on_io_thread_for_testing;
  // Tests: the directory and header operations (store/file_ops.h), e.g. a power-loss model;
  // nullptr: the real ones. Must outlive the store.
  store::FileOps* file_ops = nullptr;
  Status validate() const;
};

struct ObjectInfo {
  Key key;
  TokenRange tokens;
  uint64_t payload_bytes = 0;  // exact length of the payload
  uint32_t segment = 0;        // segment id
  uint64_t offset = 0;         // offset of the payload in the segment file (4 KiB-aligned)
  uint64_t checksum_lo = 0;    // XXH3-128 of the payload, low and high halves
  uint64_t checksum_hi = 0;
  // Which bytes the key holds: the sequence of the record that stored them. A put of other bytes
  // under the key makes a new generation; a put of the same bytes keeps it (Store::put). Every
  // copy made from the store (a fast-tier slot, a claim, a span) carries it, and a copy of another
  // generation than the one a consumer validated is never served as this object.
  uint64_t generation = 0;
  // Bytes a get() needs in its destination buffer: payload_bytes rounded up to 4 KiB.
  uint64_t read_bytes() const;
};

struct StoreStats {
  uint64_t objects = 0;
  uint64_t live_bytes = 0;      // payload bytes of indexed objects
  uint64_t segments = 0;
  uint64_t disk_bytes = 0;      // bytes of all segment files (allocated size)
  uint64_t spare_bytes = 0;     // the next segment, made ahead: counted against capacity besides
  uint64_t capacity_bytes = 0;
  uint64_t puts = 0;
  uint64_t put_bytes = 0;
  uint64_t unchanged_puts = 0;  // puts of the bytes already stored under the key: nothing written
  uint64_t gets = 0;
  uint64_t get_bytes = 0;
  uint64_t removes = 0;
  uint64_t failed_puts = 0;
  uint64_t failed_gets = 0;
  uint64_t checksum_failures = 0;     // gets that returned Corruption
  // Objects dropped from the index after failing a checksum: the drop tombstones (aux 1) found in
  // the log at open, plus the drops since.
  uint64_t dropped_records = 0;
  uint64_t quarantined_segments = 0;  // segment files with a corrupt header, renamed aside
  uint64_t quarantined_bytes = 0;     // their bytes, counted in disk_bytes until reclaimed
  uint64_t corrupt_records = 0;       // skipped at open: bad checksum inside the log
  uint64_t torn_records = 0;          // skipped at open: incomplete record at a segment's tail
  uint64_t reclaimed_segments = 0;
  uint64_t reclaimed_objects = 0;
  // Of those, what open() reclaimed because it was asked to (options.reclaim_at_open).
  uint64_t reclaimed_at_open_segments = 0;
  uint64_t reclaimed_at_open_objects = 0;
  uint64_t syncs = 0;
};

class Store {
 public:
  using DoneCallback = std::function<void(Status)>;
  using ReadCallback = std::function<void(Result<size_t>)>;  // payload bytes read
  using EvictionListener = std::function<void(const Key&)>;
  // A key entered the index (added) or left it (!added).
  using IndexListener = std::function<void(const Key&, bool added)>;
  // A write of `bytes` reached the SSD engine (started) or completed (!started).
  using WriteListener = std::function<void(uint64_t bytes, bool started)>;

  // Opens (creating when missing) the store in options.dir and rebuilds its index by scanning.
  // Runs blocking I/O on the calling thread: call it before the loop starts serving.
  static Result<std::unique_ptr<Store>> open(Executor& executor, SsdEngine& engine,
                                             const StoreOptions& options);
  virtual ~Store() = default;

  // Stores `bytes` bytes at `data` under key. One rule for a key that is already stored: the same
  // bytes (same length and checksum, and no other write of the key on its way) are a success with
  // nothing written and the generation kept, so a client that lost the reply may retry; other
  // bytes replace the object as a new generation. data may be nullptr only in simulated mode.
  // data need not be aligned; a payload of 64 KiB or more is read (hashed; written without a
  // copy when 4 KiB-aligned) after put returns, so data must stay valid and unchanged until cb
  // runs; smaller ones are copied before put returns. cb runs when the record is durable (or,
  // for unchanged bytes, at once), or with the error (ResourceExhausted for a full disk or capacity,
  // InvalidArgument for an empty or oversized payload).
  virtual void put(const Key& key, TokenRange tokens, const void* data, size_t bytes,
                   DoneCallback cb) = 0;
  // put() of a payload whose XXH3-128 the caller has already verified (tempokvd checks the one
  // its client declared): the store takes `checksum` as the record's instead of hashing `data`
  // again. Bytes that change after the caller's check no longer match it, so a later read finds
  // the record corrupt (Corruption) and never serves them.
  virtual void put_hashed(const Key& key, TokenRange tokens, const void* data, size_t bytes,
                          Hash128 checksum, DoneCallback cb) = 0;
  // Reads the payload of key into dst (4 KiB-aligned, dst_bytes >= ObjectInfo::read_bytes()).
  // dst may be nullptr in simulated mode. cb gets the payload length, NotFound, Corruption, or
  // InvalidArgument for a bad buffer.
  virtual void get(const Key& key, void* dst, size_t dst_bytes, ReadCallback cb) = 0;
  virtual bool contains(const Key& key) const = 0;
  virtual std::optional<ObjectInfo> lookup(const Key& key) const = 0;
  // How many times an object has left the index or been replaced in it (remove, reclamation, a
  // checksum drop, a put over an existing key) since open. While it stays the same, every lookup
  // that found an object still finds it with the same payload size (new keys only add).
  virtual uint64_t index_changes() const = 0;
  // The capacity_bytes the newest segment was made under (0: none recorded, or no segment).
  virtual uint64_t recorded_capacity() const = 0;
  // Removes key durably (a tombstone record), NotFound when absent.
  virtual void remove(const Key& key, DoneCallback cb) = 0;
  virtual std::vector<ObjectInfo> list() const = 0;
  // Path of a segment file, so a restore path can read an object's extent itself (with pread,
  // O_DIRECT or cuFile). Empty in simulated mode. Pin the segment while reading it that way.
  virtual std::string segment_path(uint32_t segment) const = 0;
  // Holds a segment's file against reclamation while someone reads it outside get() (a restore
  // path or cuFile). Every pin_segment needs one unpin_segment. NotFound when not live.
  virtual Status pin_segment(uint32_t segment) = 0;
  virtual void unpin_segment(uint32_t segment) = 0;
  // Declares memory that get() reads into again and again (the fast tier's arena), so that the
  // engine registers it once (io_uring fixed buffers: no page pinning per read). Best effort: an
  // engine or kernel that cannot register it reads unregistered, as before.
  virtual void register_read_buffer(void* base, size_t bytes) = 0;
  virtual void unregister_read_buffer(void* base) = 0;
  virtual StoreStats stats() const = 0;
  // Told of every object that leaves the index by reclamation (not by remove or replacement),
  // in a task posted to the Executor after the objects left the index (so it may call the store).
  virtual void set_eviction_listener(EvictionListener listener) = 0;
  // Told of every key that enters the index (a put made durable, the first generation of the
  // key: a put over an indexed key keeps it there and is not told) and of every key that leaves
  // it (remove, reclamation, a checksum drop), synchronously on the Executor thread as the index
  // changes (so it may read the store, never change it). Not told of the index open() rebuilt:
  // list() it when setting the listener. tempokvd's filter of stored keys (daemon/key_filter.h)
  // uses it. One listener; nullptr removes it.
  virtual void set_index_listener(IndexListener listener) = 0;
  // Told of every write the store issues to its SSD engine, when it is issued and when it
  // completes, synchronously on the Executor thread (so it must not call back into the store).
  // The staging provider uses it to see the device time the store's writes take from its reads.
  // One listener; nullptr removes it.
  virtual void set_write_listener(WriteListener listener) = 0;
  // Waits for writes and syncs in flight, seals nothing new; cb when the store may be destroyed.
  virtual void close(DoneCallback cb) = 0;
};

// Result of a full verification of a store directory (every header and every payload checksum).
struct VerifyReport {
  uint64_t good = 0;
  uint64_t corrupt = 0;
  uint64_t torn = 0;
  uint64_t tombstones = 0;
  uint64_t segments = 0;
  uint64_t bytes_checked = 0;
  std::vector<std::string> problems;  // one line per bad record: segment, offset, what was wrong
  struct Quarantined {
    std::string name;  // file name in the directory (seg-N.tkv.quarantine)
    uint64_t bytes = 0;
  };
  std::vector<Quarantined> quarantined;  // segments set aside for a corrupt header, in id order
  uint64_t dropped = 0;  // drop tombstones (aux 1): records dropped after failing a checksum
};
// What the newest segment of dir with a valid header records: its size and the capacity it was
// made under (see Store::recorded_capacity); zeros when dir holds no such segment (capacity 0
// also when none was recorded). Reads one header per segment from the newest down, blocking;
// changes nothing.
struct RecordedSizes {
  uint64_t segment_bytes = 0;
  uint64_t capacity_bytes = 0;
};
Result<RecordedSizes> recorded_store_sizes(const std::string& dir);

// Reads every record of every segment in dir with blocking I/O. Does not modify anything. Holds
// the directory's shared lock: FailedPrecondition while a writer (a daemon) has the store open.
Result<VerifyReport> verify_store_dir(const std::string& dir);

}  // namespace tempokv
