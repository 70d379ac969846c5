// StagedRestorePath: the pipeline shared by the posix, odirect-bounce and direct paths. They
// differ only in how a piece of a chunk reaches a host slot that the device copy reads
// (StagingConfig); the pipeline is the same:
//
//   for each piece (<= slot_bytes) of each chunk, with up to `depth` reads in flight:
//     SsdEngine read into read slot  [-> CPU copy read slot -> pinned slot, on the I/O thread]
//       -> TransferEngine copy of the pinned slot into the device buffer -> slot free again
//
// Without spare copy slots a slot is held from its read through its copy: with depth 1 this is the
// naive loop (read, copy, read, copy), and reads of later pieces overlap the copies of earlier
// ones only as far as slots allow. With them (direct) `depth` reads stay in flight whatever the
// copies do.
//
// Invariants: a slot is owned by exactly one piece from read issue to copy completion; after the
// first error no new piece is issued, and the callback runs when in_flight_ reaches 0.
// Thread safety: as RestorePath (Executor thread only); the I/O-thread hook touches only its slot.
#pragma once

#include <string>
#include <vector>

#include "common/aligned_buffer.h"
#include "transfer/restore_path.h"

namespace tempokv {

struct StagingConfig {
  std::string name;
  bool o_direct = false;           // open segment files O_DIRECT (bypass the page cache)
  bool bounce = false;             // reads land in a bounce slot; a CPU copy moves them on
  bool register_with_ssd = false;  // SsdEngine::register_buffer the read slots (fixed buffers)
  bool pin_for_device = false;     // TransferEngine::register_host the slots copies read from
  bool count_buffered_read = false;  // a buffered read's page cache -> user copy is a CPU copy
  // Slots beyond `depth` for pieces whose device copy is in flight, so that `depth` reads stay in
  // flight while copies run (direct). Without them a slot is read into and copied from in turn,
  // as a naive backend's loop does (the baselines).
  bool spare_copy_slots = false;
};

class StagedRestorePath final : public RestorePath {
 public:
  StagedRestorePath(StagingConfig config, Executor& executor, SsdEngine& ssd,
                    TransferEngine& transfer, const RestorePathOptions& options);
  ~StagedRestorePath() override;

  std::string_view name() const override { return config_.name; }
  std::string detail() const override;
  Status prepare() override;
  void restore(const RestoreSession& session, DeviceBuffer& dst, RestoreCallback cb) override;
  void release() override;
  RestoreStats stats() const override;

 private:
  struct Piece {
    uint32_t file = 0;         // index into files_
    uint64_t file_offset = 0;
    uint64_t read_bytes = 0;   // bytes read (4 KiB multiple)
    uint64_t copy_bytes = 0;   // payload bytes copied to the device
    uint64_t device_offset = 0;
  };
  std::byte* read_slot(uint32_t slot);
  std::byte* copy_slot(uint32_t slot);
  Status open_files(const RestoreSession& session);
  void close_files();
  bool next_piece(Piece* piece);
  void pump();
  void on_read(uint32_t slot, Result<size_t> r);
  void on_copy(uint32_t slot, Status st);
  void fail(Status st);
  void maybe_finish();
  // Moves the reads-in-flight count by `delta`, adding the time at the old count to the stats.
  void count_reads(int delta);

  StagingConfig config_;
  Executor& executor_;
  SsdEngine& ssd_;
  TransferEngine& transfer_;
  RestorePathOptions options_;
  CopyCounters counters_;

  AlignedBuffer staging_;  // depth slots (x2 with a bounce region: bounce slots first)
  bool ssd_registered_ = false;
  bool device_registered_ = false;
  std::vector<Piece> slot_piece_;     // per slot: the piece it holds
  std::vector<TimePoint> slot_since_;  // per slot: when its read or its copy was issued
  uint32_t slots_ = 0;                // depth, plus the spare copy slots
  std::vector<uint32_t> free_slots_;  // stack, capacity slots_

  // The restore in flight.
  bool active_ = false;
  const RestoreSession* session_ = nullptr;
  DeviceBuffer* dst_ = nullptr;
  RestoreCallback cb_;
  std::vector<int> fds_;
  std::vector<FileId> file_ids_;
  size_t next_extent_ = 0;
  uint64_t next_offset_ = 0;  // within the next extent
  uint64_t session_left_ = 0;  // bytes not yet asked for
  uint32_t in_flight_ = 0;        // pieces holding a slot (read or being copied)
  uint32_t reads_in_flight_ = 0;  // of those, pieces being read
  TimePoint last_read_done_{};   // when the restore's latest read completed
  TimePoint reads_counted_at_{};  // when reads_in_flight_ last changed
  TimePoint started_at_{};
  uint64_t restored_bytes_ = 0;
  Status error_;

  RestoreStats stats_;
};

}  // namespace tempokv
