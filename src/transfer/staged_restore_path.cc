#include "transfer/staged_restore_path.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/units.h"

namespace tempokv {

Status RestorePathOptions::validate() const {
  if (slot_bytes == 0 || !is_aligned(slot_bytes, kBlockBytes)) {
    return Status::invalid_argument("RestorePathOptions.slot_bytes (" +
                                    std::to_string(slot_bytes) +
                                    ") must be a positive multiple of 4096");
  }
  if (depth == 0) return Status::invalid_argument("RestorePathOptions.depth must be at least 1");
  if (!is_aligned(tail_min_bytes, kBlockBytes)) {
    return Status::invalid_argument("RestorePathOptions.tail_min_bytes (" +
                                    std::to_string(tail_min_bytes) +
                                    ") must be a multiple of 4096");
  }
  return Status::ok();
}

StagedRestorePath::StagedRestorePath(StagingConfig config, Executor& executor, SsdEngine& ssd,
                                     TransferEngine& transfer, const RestorePathOptions& options)
    : config_(std::move(config)),
      executor_(executor),
      ssd_(ssd),
      transfer_(transfer),
      options_(options) {}

StagedRestorePath::~StagedRestorePath() { release(); }

std::byte* StagedRestorePath::read_slot(uint32_t slot) {
  return staging_.data() + uint64_t(slot) * options_.slot_bytes;
}

std::byte* StagedRestorePath::copy_slot(uint32_t slot) {
  uint64_t base = config_.bounce ? uint64_t(slots_) * options_.slot_bytes : 0;
  return staging_.data() + base + uint64_t(slot) * options_.slot_bytes;
}

Status StagedRestorePath::prepare() {
  TEMPOKV_RETURN_IF_ERROR(options_.validate());
  if (!staging_.empty()) return Status::ok();
  if (config_.o_direct != ssd_.direct()) {
    return Status::invalid_argument(config_.name + " path needs " +
                                    (config_.o_direct ? "an O_DIRECT" : "a buffered") +
                                    " SSD engine, got '" + std::string(ssd_.name()) + "'");
  }
  // `depth` pieces being read, and with spare_copy_slots as many again, at least 2, whose device
  // copy is in flight: a read is issued as soon as one completes, not once its copy has.
  slots_ = options_.depth + (config_.spare_copy_slots ? std::max<uint32_t>(2, options_.depth) : 0);
  uint64_t slots = uint64_t(slots_) * (config_.bounce ? 2 : 1);
  TEMPOKV_ASSIGN_OR_RETURN(staging_, AlignedBuffer::allocate(slots * options_.slot_bytes, true));
  // Fault every page in now, so that no restore takes a page fault on its staging memory.
  std::memset(staging_.data(), 0, staging_.size());
  uint64_t pinned_bytes = uint64_t(slots_) * options_.slot_bytes;
  if (config_.register_with_ssd) {
    TEMPOKV_RETURN_IF_ERROR(ssd_.register_buffer(read_slot(0), pinned_bytes));
    ssd_registered_ = true;
  }
  if (config_.pin_for_device) {
    TEMPOKV_RETURN_IF_ERROR(transfer_.register_host(copy_slot(0), pinned_bytes));
    device_registered_ = true;
  }
  slot_piece_.assign(slots_, Piece{});
  slot_since_.assign(slots_, TimePoint{});
  free_slots_.clear();
  free_slots_.reserve(slots_);
  for (uint32_t s = slots_; s-- > 0;) free_slots_.push_back(s);
  stats_.staging_bytes = staging_.size();
  return Status::ok();
}

void StagedRestorePath::release() {
  if (staging_.empty()) return;
  if (ssd_registered_) ssd_.unregister_buffer(read_slot(0));
  if (device_registered_) transfer_.unregister_host(copy_slot(0));
  ssd_registered_ = device_registered_ = false;
  staging_ = AlignedBuffer();
  slot_piece_.clear();
  free_slots_.clear();
  stats_.staging_bytes = 0;
}

std::string StagedRestorePath::detail() const {
  return std::string(ssd_.name()) + ", " + std::to_string(options_.depth) + " reads in flight, " +
         std::to_string(slots_) + " x " + format_bytes(options_.slot_bytes) + " slots" +
         (config_.bounce ? " + bounce" : "") +
         (options_.tail_min_bytes ? ", last reads down to " + format_bytes(options_.tail_min_bytes)
                                  : "");
}

RestoreStats StagedRestorePath::stats() const {
  RestoreStats s = stats_;
  s.cpu_copies = counters_.snapshot();
  return s;
}

Status StagedRestorePath::open_files(const RestoreSession& session) {
  int flags = O_RDONLY | O_CLOEXEC | (config_.o_direct ? O_DIRECT : 0);
  for (const std::string& path : session.files()) {
    int fd = ::open(path.c_str(), flags);
    if (fd < 0) return Status::from_errno(errno, "open " + path);
    fds_.push_back(fd);
    Result<FileId> id = ssd_.add_file(fd);
    if (!id.is_ok()) return id.status();
    file_ids_.push_back(*id);
  }
  return Status::ok();
}

void StagedRestorePath::close_files() {
  for (FileId id : file_ids_) ssd_.remove_file(id);
  for (int fd : fds_) ::close(fd);
  file_ids_.clear();
  fds_.clear();
}

void StagedRestorePath::restore(const RestoreSession& session, DeviceBuffer& dst,
                                RestoreCallback cb) {
  auto reject = [&](Status st) {
    ++stats_.failures;
    executor_.post([cb = std::move(cb), st = std::move(st)] { cb(st); });
  };
  if (active_) return reject(Status::failed_precondition(config_.name + ": restore in flight"));
  if (staging_.empty()) return reject(Status::failed_precondition(config_.name + ": not prepared"));
  if (Status st = check_device_range(dst, 0, session.device_bytes()); !st.is_ok()) {
    return reject(Status::invalid_argument(config_.name + ": device buffer too small for the " +
                                           "session: " + st.message()));
  }
  active_ = true;
  session_ = &session;
  dst_ = &dst;
  cb_ = std::move(cb);
  next_extent_ = 0;
  next_offset_ = 0;
  session_left_ = 0;
  for (const RestoreExtent& e : session.extents()) session_left_ += e.read_bytes;
  restored_bytes_ = 0;
  error_ = Status::ok();
  started_at_ = reads_counted_at_ = executor_.now();
  if (Status st = open_files(session); !st.is_ok()) fail(std::move(st));
  pump();
  maybe_finish();
}

bool StagedRestorePath::next_piece(Piece* piece) {
  const auto& extents = session_->extents();
  if (next_extent_ >= extents.size()) return false;
  const RestoreExtent& e = extents[next_extent_];
  piece->file = e.file_index;
  piece->file_offset = e.file_offset + next_offset_;
  piece->read_bytes = piece_bytes(e.read_bytes - next_offset_, session_left_, options_);
  session_left_ -= piece->read_bytes;
  piece->copy_bytes = std::min<uint64_t>(piece->read_bytes, e.payload_bytes - next_offset_);
  piece->device_offset = e.device_offset + next_offset_;
  next_offset_ += piece->read_bytes;
  if (next_offset_ >= e.read_bytes) {
    ++next_extent_;
    next_offset_ = 0;
  }
  return true;
}

void StagedRestorePath::pump() {
  while (error_.is_ok() && !free_slots_.empty() && reads_in_flight_ < options_.depth) {
    Piece piece;
    if (!next_piece(&piece)) return;
    uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    slot_piece_[slot] = piece;
    slot_since_[slot] = executor_.now();
    ++in_flight_;
    count_reads(+1);
    ++stats_.reads;
    stats_.read_bytes += piece.read_bytes;
    IoThreadHook hook;
    if (config_.bounce) {
      // The seed's O_DIRECT path: the CPU moves every byte from the bounce slot to pinned memory.
      hook = [this, slot](size_t bytes) {
        counted_host_memcpy(counters_, copy_slot(slot), read_slot(slot),
                            std::min<uint64_t>(bytes, slot_piece_[slot].copy_bytes));
        return Status::ok();
      };
    } else if (config_.count_buffered_read) {
      // The kernel copies a buffered read out of the page cache with the CPU.
      hook = [this](size_t bytes) {
        counters_.add_host(bytes);
        return Status::ok();
      };
    }
    ssd_.read(file_ids_[piece.file], piece.file_offset, read_slot(slot), piece.read_bytes,
              [this, slot](Result<size_t> r) { on_read(slot, std::move(r)); }, std::move(hook));
  }
}

void StagedRestorePath::count_reads(int delta) {
  const TimePoint now = executor_.now();
  stats_.read_depth_ns += uint64_t(reads_in_flight_) * uint64_t((now - reads_counted_at_).count());
  reads_counted_at_ = now;
  reads_in_flight_ = uint32_t(int(reads_in_flight_) + delta);
}

void StagedRestorePath::on_read(uint32_t slot, Result<size_t> r) {
  const Piece& piece = slot_piece_[slot];
  count_reads(-1);
  last_read_done_ = executor_.now();
  stats_.read_ns += uint64_t((executor_.now() - slot_since_[slot]).count());
  slot_since_[slot] = executor_.now();
  Status st = r.status();
  if (st.is_ok() && *r < piece.read_bytes) {
    st = Status::io_error(config_.name + ": short read (" + std::to_string(*r) + " of " +
                          std::to_string(piece.read_bytes) + " bytes) of " +
                          session_->files()[piece.file] + " at offset " +
                          std::to_string(piece.file_offset));
  }
  if (!st.is_ok() || !error_.is_ok()) {
    if (!st.is_ok()) fail(std::move(st));
    free_slots_.push_back(slot);
    --in_flight_;
    maybe_finish();
    return;
  }
  transfer_.copy_to_device(copy_slot(slot), *dst_, piece.device_offset, piece.copy_bytes,
                           [this, slot](Status cst) { on_copy(slot, std::move(cst)); });
  pump();  // the read finished: with a spare slot the next one goes now, beside the copy
}

void StagedRestorePath::on_copy(uint32_t slot, Status st) {
  stats_.copy_ns += uint64_t((executor_.now() - slot_since_[slot]).count());
  if (st.is_ok()) {
    restored_bytes_ += slot_piece_[slot].copy_bytes;
  } else {
    fail(std::move(st));
  }
  free_slots_.push_back(slot);
  --in_flight_;
  pump();
  maybe_finish();
}

void StagedRestorePath::fail(Status st) {
  if (error_.is_ok()) error_ = std::move(st);
}

void StagedRestorePath::maybe_finish() {
  if (!active_ || in_flight_ > 0) return;
  if (error_.is_ok() && next_extent_ < session_->extents().size()) return;
  close_files();
  stats_.restore_ns += uint64_t((executor_.now() - started_at_).count());
  if (last_read_done_ > started_at_) {
    stats_.tail_ns += uint64_t((executor_.now() - last_read_done_).count());
  }
  active_ = false;
  session_ = nullptr;
  dst_ = nullptr;
  // Posted, not called: the caller never sees its callback re-enter from inside restore().
  Result<uint64_t> result = restored_bytes_;
  if (error_.is_ok()) {
    ++stats_.restores;
    stats_.bytes += restored_bytes_;
  } else {
    ++stats_.failures;
    result = std::exchange(error_, Status::ok());
  }
  executor_.post([cb = std::move(cb_), result = std::move(result)]() mutable {
    cb(std::move(result));
  });
  cb_ = nullptr;
}

}  // namespace tempokv
