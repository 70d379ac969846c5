// StoreImpl: the one implementation of Store (store.h is the contract). Split by concern:
//   store_open.cc    open, recovery from a scan, close, teardown
//   store_write.cc   put/remove, record placement, group commit, sealing (puts of 64 KiB or more
//                    are hashed, and copied when unaligned, on the write worker (JobThreads))
//   roll.cc          the next segment, created ahead on the creator thread, never on the loop
//   store_read.cc    get, lookup, list, stats
//   reclaim.cc       capacity and oldest-first segment reclamation
//   quarantine.cc    segments with a corrupt header, records failing their checksum
//
// Loop thread only (every method and every engine callback runs on the Executor). Invariants:
//   * index_ holds exactly the objects get() may serve; each entry's segment is in segments_ and
//     not kReclaimed.
//   * in_flight_[k] holds the sequence of the newest put/remove of k submitted and not finished;
//     a finishing put enters the index only when it is still that newest one.
//   * live_disk_bytes_ sums the bytes of segments not reclaimed and of quarantined files (the
//     capacity accounting); quarantined_bytes_ is the latter part.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/aligned_buffer.h"
#include "common/job_threads.h"
#include "store/format.h"
#include "store/segment.h"
#include "store/store.h"

namespace tempokv::store {

// A segment file being deleted after reclamation; open() deletes any it finds.
inline constexpr std::string_view kReclaimedSuffix = ".reclaimed";

// A segment file created ahead of need ("seg-N.tkv.next"): renamed to its segment name (and the
// directory synced) when the active segment fills. open() deletes any it finds.
inline constexpr std::string_view kNextSuffix = ".next";

// One record (put, tombstone or seal) from its call until durable. Its sequence is fixed at the
// call; it is placed (segment, offset) in call order once a segment has room, and submitted once
// placed and prepared.
struct PendingWrite {
  RecordHeader header;
  Segment* segment = nullptr;
  uint64_t offset = 0;  // of the header block
  Store::DoneCallback cb;
  const void* data = nullptr;  // the caller's payload (valid until cb for payloads >= 64 KiB)
  int pieces_left = 0;  // engine writes not yet completed
  Status status;
  bool placed = false;     // segment and offset assigned
  bool prepared = false;   // checksum and buffers ready (prepare_payload; worker_ when large)
  bool zero_copy = false;  // the payload goes out from the caller's memory
  bool abandoned = false;  // failed while the worker prepared it: the worker's continuation frees it
  AlignedBytes head;  // the header block, or the whole record when the payload was copied
  AlignedBytes tail;  // the payload's last partial block (zero-copy path)
};
// Fills w's payload buffers from data: a record-sized buffer with the payload copied after the
// header block, or (zero-copy) a header block and the payload's last partial block. The header
// itself is encoded at submission. Any thread: touches only those buffers, zero_copy and status
// (out of memory).
void prepare_payload(PendingWrite* w, const void* data);

class StoreImpl final : public Store {
 public:
  StoreImpl(Executor& executor, SsdEngine& engine, const StoreOptions& options);
  ~StoreImpl() override;
  StoreImpl(const StoreImpl&) = delete;
  StoreImpl& operator=(const StoreImpl&) = delete;

  // Open's work: lock the directory, scan every segment, rebuild the index (real mode).
  Status recover();

  void put(const Key& key, TokenRange tokens, const void* data, size_t bytes,
           DoneCallback cb) override {
    put_record(key, tokens, data, bytes, std::nullopt, std::move(cb));
  }
  void put_hashed(const Key& key, TokenRange tokens, const void* data, size_t bytes,
                  Hash128 checksum, DoneCallback cb) override {
    put_record(key, tokens, data, bytes, Checksum128{checksum.low, checksum.high}, std::move(cb));
  }
  void get(const Key& key, void* dst, size_t dst_bytes, ReadCallback cb) override;
  bool contains(const Key& key) const override { return index_.contains(key); }
  std::optional<ObjectInfo> lookup(const Key& key) const override;
  uint64_t index_changes() const override { return index_changes_; }
  uint64_t recorded_capacity() const override { return recorded_capacity_; }
  void remove(const Key& key, DoneCallback cb) override;
  std::vector<ObjectInfo> list() const override;
  std::string segment_path(uint32_t segment) const override;
  Status pin_segment(uint32_t segment) override;
  void unpin_segment(uint32_t segment) override;
  void register_read_buffer(void* base, size_t bytes) override {
    if (!options_.simulated && base != nullptr) (void)engine_.register_buffer(base, bytes);
  }
  void unregister_read_buffer(void* base) override {
    if (!options_.simulated && base != nullptr) engine_.unregister_buffer(base);
  }
  StoreStats stats() const override;
  void set_eviction_listener(EvictionListener listener) override {
    listener_ = std::move(listener);
  }
  void set_index_listener(IndexListener listener) override {
    index_listener_ = std::move(listener);
  }
  void set_write_listener(WriteListener listener) override {
    write_listener_ = std::move(listener);
  }
  void close(DoneCallback cb) override;

 private:
  // put and put_hashed: `known` is the payload's checksum when the caller verified it.
  void put_record(const Key& key, TokenRange tokens, const void* data, size_t bytes,
                  std::optional<Checksum128> known, DoneCallback cb);
  struct Entry {
    uint32_t segment = 0;
    uint64_t offset = 0;  // of the payload
    uint64_t payload_bytes = 0;
    TokenRange tokens;
    Checksum128 checksum;
    uint64_t sequence = 0;
  };
  static ObjectInfo info(const Key& key, const Entry& e) {
    return {key, e.tokens, e.payload_bytes, e.segment, e.offset, e.checksum.low, e.checksum.high,
            e.sequence};
  }
  struct InFlight {
    uint64_t newest_sequence = 0;
    uint32_t count = 0;
  };

  // store_open.cc
  Status scan_all(const std::vector<uint32_t>& ids);
  Status adopt_segment(uint32_t id, const struct SegmentScan& scan, bool writable);
  // Refuses (or, when asked, reclaims) a store found above capacity at open.
  Status fit_capacity();
  void index_put(const Key& key, const Entry& e);
  void index_erase(const Key& key);
  void maybe_finish_close();
  void fail_soon(DoneCallback cb, Status st);
  // store_write.cc
  // Gives header its sequence and counts the write in flight; the caller prepares and queues it.
  PendingWrite* admit(const RecordHeader& header, DoneCallback cb);
  // A put of exactly the bytes indexed under key, with no other write of the key on its way
  // (`own_write`: the put itself is admitted and counted in in_flight_): it needs no record.
  bool unchanged(const Key& key, uint64_t bytes, const Checksum128& checksum,
                 bool own_write) const;
  // A prepared put that turned out unchanged(): undoes admit() and completes it OK.
  void finish_unchanged(PendingWrite* w);
  // Places waiting_ in order into the active segment, rolling to the next one when it is full.
  void place_waiting();
  // Queues w for the engine once placed and prepared (ready_writes_), then pump_writes().
  void maybe_submit(PendingWrite* w);
  // Submits ready writes in order while the writes at the engine stay within the byte limit of
  // StoreOptions (the one for reading while a get is at the engine); one record always goes.
  void pump_writes();
  void submit(PendingWrite* w);
  void on_piece_done(PendingWrite* w, Result<size_t> r, size_t expected);
  void maybe_sync(Segment& seg);
  void on_sync_done(Segment& seg, std::vector<PendingWrite*> batch, Result<size_t> r);
  // Applies a finished record to the index and stats; returns its callback for the caller to run
  // once no segment state is touched any more.
  DoneCallback finish(PendingWrite* w, const Status& st);
  void maybe_seal(Segment& seg);
  void retire(Segment& seg);
  // roll.cc: segment creation off the loop
  // The active segment cannot take the next write: seal it and install the next one when it is
  // ready (true), or start making it and return false (placement resumes when it lands).
  bool roll();
  // Starts creating the next segment ahead of need, when it fits under capacity as it is.
  void want_spare();
  void start_next(bool spare);
  void on_next_done(uint32_t id, Result<int> fd, bool published);
  Status install(uint32_t id, int fd);
  // A segment record for file `fd` (registered with the engine; closed when that fails).
  Result<std::unique_ptr<Segment>> new_segment(uint32_t id, int fd, std::string path);
  void fail_waiting(const Status& st);
  void discard_spare();
  // reclaim.cc
  Status make_room(uint64_t extra_bytes);
  void reclaim(Segment& seg);
  void maybe_destroy(Segment& seg);
  void destroy(Segment& seg);
  // Renames path to *.reclaimed now and deletes it on the unlinker thread.
  void remove_file_off_loop(const std::string& path);
  Status remove_reclaimed_leftovers();
  // quarantine.cc
  Status quarantine(uint32_t id, const std::string& path);
  Status adopt_quarantined(const std::string& dir);
  // Deletes the oldest quarantined file when it is older than every live segment.
  bool reclaim_quarantined();
  // A get found key's payload corrupt: drop it from the index and, when writable, tombstone it.
  void drop_corrupt(const Key& key, uint64_t sequence);

  Executor& executor_;
  SsdEngine& engine_;
  StoreOptions options_;
  FileOps& files_;  // options_.file_ops or the real ones
  std::unordered_map<Key, Entry> index_;
  std::unordered_map<Key, InFlight> in_flight_;
  std::map<uint32_t, std::unique_ptr<Segment>> segments_;
  Segment* active_ = nullptr;
  std::deque<PendingWrite*> waiting_;  // admitted, not yet placed (in call order)
  std::deque<PendingWrite*> ready_writes_;  // placed and prepared, waiting for the engine
  uint64_t write_bytes_at_engine_ = 0;      // record bytes of the writes submitted, not done
  size_t gets_at_engine_ = 0;
  bool pumping_ = false;  // pump_writes() is on the stack (a write that fails at submission)
  // The segment after active_, made on creator_: kCreating (as a spare "*.next" file, or under
  // its own name when writes already wait for it), kReady (a spare), kPublishing (the spare being
  // renamed to its segment name). Its bytes count in live_disk_bytes_ from the start.
  enum class NextState { kNone, kCreating, kReady, kPublishing };
  NextState next_state_ = NextState::kNone;
  uint32_t next_id_ = 0;
  int next_fd_ = -1;
  bool next_needed_ = false;  // writes wait for it: install as soon as it lands
  uint32_t next_segment_id_ = 1;
  uint64_t next_sequence_ = 1;
  uint64_t live_disk_bytes_ = 0;
  uint64_t recorded_capacity_ = 0;  // the newest segment header's capacity_bytes
  uint64_t live_payload_bytes_ = 0;
  uint64_t index_changes_ = 0;  // index_changes(): bumped by index_erase and a replacing index_put
  std::map<uint32_t, std::pair<std::string, uint64_t>> quarantined_;  // id -> (path, bytes)
  uint64_t quarantined_bytes_ = 0;
  uint64_t ops_in_flight_ = 0;  // writes (until durable) and reads
  StoreStats stats_;
  EvictionListener listener_;
  WriteListener write_listener_;
  IndexListener index_listener_;  // told by index_put (a new key) and index_erase
  int lock_fd_ = -1;
  bool closing_ = false;
  DoneCallback close_cb_;
  // Continuations that the store's threads post to the Executor check it first: a store destroyed
  // without close (a test's crash) ignores them instead of touching freed memory.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
  JobThreads unlinker_;  // deletes reclaimed segment files
  JobThreads creator_;    // creates (fallocate, header, syncs) and publishes the next segment
  JobThreads worker_;     // last: destroyed (joined) first
};

}  // namespace tempokv::store
