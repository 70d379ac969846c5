// RestorePath: one way of landing a stored session in device memory (seed 000's "paths").
//
// Lifecycle, NIXL-style: prepare() once (allocate and register staging memory, load libraries;
// Unavailable when the path cannot run on this machine) -> register_destination() once per
// destination buffer -> restore() any number of times, one at a time -> release(). restore()
// allocates nothing: it reads into the buffers prepare() made.
//
// Paths (one file each):
//   posix           buffered pread through the page cache into a host buffer, then a device copy
//                   of that (pageable) buffer — what a naive disk backend does;
//   odirect-bounce  O_DIRECT reads into a bounce buffer, a CPU copy into a pinned buffer, then the
//                   device copy — the seed's O_DIRECT path;
//   direct          io_uring O_DIRECT reads straight into registered, pinned staging slots that
//                   the device copy reads from, several chunks in flight so reads and copies
//                   overlap; no CPU copy on the way;
//   gds             cuFile reads from the file straight into CUDA memory (GPUDirect Storage).
//
// Thread safety: every method runs on the Executor's thread; callbacks run there too.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ssd/ssd_engine.h"
#include "tempokv/executor.h"
#include "tempokv/status.h"
#include "transfer/copy_counters.h"
#include "transfer/device_buffer.h"
#include "transfer/restore_session.h"
#include "transfer/transfer_engine.h"

namespace tempokv {

// Payload bytes restored, or the first error.
using RestoreCallback = std::function<void(Result<uint64_t>)>;

struct RestorePathOptions {
  uint64_t slot_bytes = 16ULL << 20;  // one staging slot = the largest single read request
  uint32_t depth = 4;                 // staging slots, so reads (and copies) in flight
  // The taper at a session's end (0: none): see piece_bytes.
  uint64_t tail_min_bytes = 0;
  // slot_bytes and tail_min_bytes multiples of 4 KiB, slot_bytes positive, depth >= 1.
  Status validate() const;
};

// The bytes of a session's next read: at most slot_bytes and what is left of its extent; with a
// taper, also at most a quarter of what is left of the session (no less than tail_min_bytes), so
// near the end each read's device copy ends while the reads after it still keep the drive busy,
// and the copy after the last read, which nothing overlaps, is short. Multiples of 4 KiB when
// the options are. restore-bench's fio reads the same bytes untapered.
uint64_t piece_bytes(uint64_t extent_left, uint64_t session_left, const RestorePathOptions& o);

struct RestoreStats {
  uint64_t restores = 0;
  uint64_t failures = 0;
  uint64_t bytes = 0;             // payload bytes restored
  uint64_t reads = 0;             // read requests issued
  uint64_t read_bytes = 0;        // bytes those requests asked for (whole blocks)
  uint64_t staging_bytes = 0;     // host memory the path holds now (0 after release)
  // Stage times of the staged paths (0 for gds), summed over restores, in ns: restores (first
  // read issued to the callback posted), reads (issued to their callback on the Executor: the
  // drive, completion reaping and the hand-off), device copies (issued to their callback), and
  // the integral of reads in flight over time (over restore_ns: the read depth kept on average).
  uint64_t restore_ns = 0;
  uint64_t read_ns = 0;
  uint64_t copy_ns = 0;
  // The tail: from the last read's completion to the callback, what no read overlaps (the last
  // copies and the hand-off).
  uint64_t tail_ns = 0;
  uint64_t read_depth_ns = 0;
  CopyCountersSnapshot cpu_copies;  // host-side CPU copies made by the path itself
};

class RestorePath {
 public:
  virtual ~RestorePath() = default;
  virtual std::string_view name() const = 0;
  // How the path runs here, for reports ("cuFile batch API", "io_uring, 4 x 24 MiB slots").
  virtual std::string detail() const { return {}; }

  virtual Status prepare() = 0;
  // Registers memory that restores will land in (cuFileBufRegister for gds). Others: no-op.
  virtual Status register_destination(DeviceBuffer&) { return Status::ok(); }
  virtual void unregister_destination(DeviceBuffer&) {}
  // Lands every extent of session in dst at its device_offset (dst.size() >= device_bytes()).
  // cb runs once, on the Executor, after every read and copy of this restore has finished.
  virtual void restore(const RestoreSession& session, DeviceBuffer& dst, RestoreCallback cb) = 0;
  // Frees and unregisters everything prepare() made. Not while a restore is in flight.
  virtual void release() = 0;
  virtual RestoreStats stats() const = 0;
};

// The four paths. ssd must outlive the path; posix needs a buffered engine (direct() false), the
// others an O_DIRECT one; direct wants the io_uring engine (it registers its slots with it).
std::unique_ptr<RestorePath> make_posix_restore_path(Executor& executor, SsdEngine& ssd,
                                                     TransferEngine& transfer,
                                                     const RestorePathOptions& options);
std::unique_ptr<RestorePath> make_odirect_bounce_restore_path(Executor& executor, SsdEngine& ssd,
                                                              TransferEngine& transfer,
                                                              const RestorePathOptions& options);
std::unique_ptr<RestorePath> make_direct_restore_path(Executor& executor, SsdEngine& ssd,
                                                      TransferEngine& transfer,
                                                      const RestorePathOptions& options);
// gds reads with cuFile itself (no SsdEngine). slot_bytes is capped at 16 MiB per request.
std::unique_ptr<RestorePath> make_gds_restore_path(Executor& executor, TransferEngine& transfer,
                                                   const RestorePathOptions& options);

// The request size and depth a path runs at when not told otherwise. direct: 4 MiB pieces (the
// largest request a typical NVMe or virtio queue takes whole, max_sectors_kb) 16 deep, so 64 MiB
// is in flight (fio reads these extents fastest around 16 x 4 MiB; 4 x 24 MiB left the drive idle
// behind each copy), tapered to 512 KiB pieces at the session's end so the last copy is short. gds: 4
// requests of up to 16 MiB. posix and odirect-bounce: whole chunks (up to 64 MiB), one at a
// time, as a naive backend reads them. A chunk smaller than the piece is read whole.
RestorePathOptions default_restore_options(std::string_view path, uint64_t chunk_bytes);

// The path names, in the seed's order.
const std::vector<std::string>& restore_path_names();

}  // namespace tempokv
