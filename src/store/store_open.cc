// Store::open and recovery: lock the directory, scan every segment, rebuild the index, hold the
// capacity; close and teardown.
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "store/dir_lock.h"
#include "store/scan.h"
#include "store/store_impl.h"

namespace tempokv {

Status StoreOptions::validate() const {
  if (!simulated && dir.empty()) return Status::invalid_argument("StoreOptions.dir is empty");
  if (segment_bytes < 4 * kBlockBytes || !is_aligned(segment_bytes, kBlockBytes)) {
    return Status::invalid_argument("StoreOptions.segment_bytes (" + std::to_string(segment_bytes) +
                                    ") must be a multiple of 4 KiB and at least 16 KiB");
  }
  if (max_object_bytes == 0) return Status::invalid_argument("StoreOptions.max_object_bytes is 0");
  // A record plus the segment header and the seal must fit in one segment.
  if (round_up(max_object_bytes, kBlockBytes) + 3 * kBlockBytes > segment_bytes) {
    return Status::invalid_argument(
        "StoreOptions.max_object_bytes (" + std::to_string(max_object_bytes) +
        ") plus 12 KiB of headers does not fit in segment_bytes (" + std::to_string(segment_bytes) +
        ")");
  }
  if (capacity_bytes < segment_bytes) {
    return Status::invalid_argument("StoreOptions.capacity_bytes (" +
                                    std::to_string(capacity_bytes) +
                                    ") is smaller than one segment (segment_bytes " +
                                    std::to_string(segment_bytes) + ")");
  }
  return Status::ok();
}

uint64_t ObjectInfo::read_bytes() const { return round_up(payload_bytes, kBlockBytes); }

Result<std::unique_ptr<Store>> Store::open(Executor& executor, SsdEngine& engine,
                                           const StoreOptions& options) {
  TEMPOKV_RETURN_IF_ERROR(options.validate());
  auto store = std::make_unique<store::StoreImpl>(executor, engine, options);
  TEMPOKV_RETURN_IF_ERROR(store->recover());
  return std::unique_ptr<Store>(std::move(store));
}

namespace store {

StoreImpl::StoreImpl(Executor& executor, SsdEngine& engine, const StoreOptions& options)
    : executor_(executor),
      engine_(engine),
      options_(options),
      files_(options.file_ops != nullptr ? *options.file_ops : real_file_ops()) {
  stats_.capacity_bytes = options.capacity_bytes;
}

StoreImpl::~StoreImpl() {
  for (PendingWrite* w : ready_writes_) delete w;  // never reached the engine (a crash in a test)
  if (next_state_ == NextState::kReady && next_fd_ >= 0) ::close(next_fd_);  // open deletes it
  for (auto& [id, seg] : segments_) {
    engine_.remove_file(seg->file);
    if (seg->fd >= 0) ::close(seg->fd);
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

Status StoreImpl::recover() {
  if (options_.simulated) return Status::ok();
  namespace fs = std::filesystem;
  std::error_code ec;
  if (options_.read_only) {
    if (!fs::is_directory(options_.dir, ec)) {
      return Status::not_found("store directory " + options_.dir + " does not exist");
    }
  } else {
    fs::create_directories(options_.dir, ec);
    if (ec) return Status::io_error("create store directory " + options_.dir + ": " + ec.message());
  }
  TEMPOKV_ASSIGN_OR_RETURN(lock_fd_, lock_store_dir(options_.dir, options_.read_only
                                                                      ? LockMode::kShared
                                                                      : LockMode::kExclusive));
  std::vector<uint32_t> ids;
  for (const auto& entry : fs::directory_iterator(options_.dir, ec)) {
    if (auto id = parse_segment_file_name(entry.path().filename().string())) ids.push_back(*id);
  }
  if (ec) return Status::io_error("list " + options_.dir + ": " + ec.message());
  std::sort(ids.begin(), ids.end());
  // A reclaimed segment whose deletion a crash cut short, or a spare never used: not in the store.
  if (!options_.read_only) TEMPOKV_RETURN_IF_ERROR(remove_reclaimed_leftovers());
  TEMPOKV_RETURN_IF_ERROR(adopt_quarantined(options_.dir));
  TEMPOKV_RETURN_IF_ERROR(scan_all(ids));
  TEMPOKV_RETURN_IF_ERROR(fit_capacity());
  if (active_ != nullptr) want_spare();
  return Status::ok();
}

Status StoreImpl::scan_all(const std::vector<uint32_t>& ids) {
  std::unordered_map<Key, uint64_t> tombstone_sequence;
  for (uint32_t id : ids) {
    next_segment_id_ = std::max(next_segment_id_, id + 1);
    std::string path = options_.dir + "/" + segment_file_name(id);
    TEMPOKV_ASSIGN_OR_RETURN(SegmentScan scan, scan_segment(path, id, PayloadCheck::kIfUnsealed));
    stats_.corrupt_records += scan.corrupt;
    stats_.torn_records += scan.torn;
    if (!scan.header) {
      bool interrupted_create = id == ids.back() && !scan.data_after_header &&
                                (scan.header_defect == HeaderDefect::kZero ||
                                 scan.header_defect == HeaderDefect::kTorn);
      if (interrupted_create) {
        // Creation syncs the header before any record goes in, and every block after it is
        // still zero: nothing was stored here. Anything else is quarantined, every byte kept.
        ++stats_.torn_records;
        if (options_.read_only) continue;  // a writer's open removes it
        TEMPOKV_RETURN_IF_ERROR(files_.unlink(path));
        TEMPOKV_RETURN_IF_ERROR(files_.sync_dir(options_.dir));
      } else {
        ++stats_.corrupt_records;
        TEMPOKV_RETURN_IF_ERROR(quarantine(id, path));
      }
      continue;
    }
    bool clean_tail = id == ids.back() && !scan.sealed && scan.corrupt == 0 && scan.torn == 0;
    recorded_capacity_ = scan.header->capacity_bytes;  // ids ascend: the newest one's stays
    TEMPOKV_RETURN_IF_ERROR(adopt_segment(id, scan, clean_tail && !options_.read_only));
    Segment& seg = *segments_.at(id);
    for (const ScannedRecord& r : scan.records) {
      next_sequence_ = std::max(next_sequence_, r.header.sequence + 1);
      if (r.state != RecordState::kGood) continue;
      const Key& key = r.header.key;
      auto it = index_.find(key);
      if (r.header.tombstone()) {
        // A drop (aux 1) stays counted across reopen while its tombstone is in the log.
        if (r.header.aux == kTombstoneCorrupt) ++stats_.dropped_records;
        if (it != index_.end() && it->second.sequence < r.header.sequence) index_erase(key);
        uint64_t& t = tombstone_sequence[key];
        t = std::max(t, r.header.sequence);
        continue;
      }
      auto t = tombstone_sequence.find(key);
      if (t != tombstone_sequence.end() && t->second > r.header.sequence) continue;
      if (it != index_.end() && it->second.sequence > r.header.sequence) continue;
      index_put(key, {id, r.offset + kHeaderBytes, r.header.payload_bytes, r.header.tokens,
                      r.header.payload_checksum, r.header.sequence});
      seg.keys.push_back(key);
    }
  }
  return Status::ok();
}

Status StoreImpl::fit_capacity() {
  if (options_.read_only || live_disk_bytes_ <= options_.capacity_bytes) return Status::ok();
  if (options_.reclaim_at_open) {
    // Asked for: the deletions are counted apart, so the caller can say what went.
    const uint64_t segments = stats_.reclaimed_segments, objects = stats_.reclaimed_objects;
    Status st = make_room(0);
    stats_.reclaimed_at_open_segments = stats_.reclaimed_segments - segments;
    stats_.reclaimed_at_open_objects = stats_.reclaimed_objects - objects;
    return st;
  }
  // A crash while the oldest segment was sealing (so that it could be reclaimed) leaves a store
  // one unsealed segment over the capacity it was made under. Such a store opens as it is, every
  // byte kept: the writer's own reclamation takes that segment when it next needs room, as it
  // would have without the crash. Any other excess, a capacity cut above all, is refused: open
  // deletes only when asked to.
  const Segment* oldest = segments_.empty() ? nullptr : segments_.begin()->second.get();
  const bool same_capacity =
      recorded_capacity_ != 0 && options_.capacity_bytes >= recorded_capacity_;
  const bool crash_mid_seal = same_capacity && oldest != nullptr &&
                              oldest->state == SegmentState::kRetired && quarantined_.empty() &&
                              live_disk_bytes_ - oldest->bytes <= options_.capacity_bytes;
  if (crash_mid_seal) return Status::ok();
  return Status::failed_precondition(
      "store directory " + options_.dir + " holds " + std::to_string(live_disk_bytes_) +
      " bytes of segments, more than capacity_bytes " + std::to_string(options_.capacity_bytes) +
      (recorded_capacity_ != 0 ? " (it was made with " + std::to_string(recorded_capacity_) + ")"
                               : std::string()) +
      ": open it with a capacity of at least " + std::to_string(live_disk_bytes_) +
      " bytes, or ask for its oldest segments to be reclaimed (reclaim_at_open, --reclaim)");
}

Status StoreImpl::adopt_segment(uint32_t id, const SegmentScan& scan, bool writable) {
  std::string path = options_.dir + "/" + segment_file_name(id);
  TEMPOKV_ASSIGN_OR_RETURN(int fd,
                           open_segment_file(path, engine_.direct(), options_.read_only));
  TEMPOKV_ASSIGN_OR_RETURN(std::unique_ptr<Segment> seg, new_segment(id, fd, path));
  seg->bytes = scan.file_bytes;
  seg->write_offset = scan.end_offset;
  seg->records = scan.records.size();
  seg->state = scan.sealed ? SegmentState::kSealed
                           : (writable ? SegmentState::kActive : SegmentState::kRetired);
  // A tail that cannot take one more smallest record and the seal is sealed on the first put.
  if (writable) active_ = seg.get();
  live_disk_bytes_ += seg->bytes;
  segments_[id] = std::move(seg);
  return Status::ok();
}

void StoreImpl::index_put(const Key& key, const Entry& e) {
  auto [it, inserted] = index_.try_emplace(key, e);
  if (!inserted) {
    ++index_changes_;
    live_payload_bytes_ -= it->second.payload_bytes;
    it->second = e;
  } else if (index_listener_) {
    index_listener_(key, true);
  }
  live_payload_bytes_ += e.payload_bytes;
}

void StoreImpl::index_erase(const Key& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return;
  ++index_changes_;
  live_payload_bytes_ -= it->second.payload_bytes;
  const Key gone = key;  // key may name the entry's own copy
  index_.erase(it);
  if (index_listener_) index_listener_(gone, false);
}

void StoreImpl::fail_soon(DoneCallback cb, Status st) {
  executor_.post([cb = std::move(cb), st = std::move(st)]() mutable {
    if (cb) cb(std::move(st));
  });
}

void StoreImpl::close(DoneCallback cb) {
  closing_ = true;
  close_cb_ = std::move(cb);
  maybe_finish_close();
}

void StoreImpl::maybe_finish_close() {
  if (!closing_ || ops_in_flight_ != 0 || !close_cb_) return;
  discard_spare();
  fail_soon(std::move(close_cb_), Status::ok());
  close_cb_ = nullptr;
}

}  // namespace store
}  // namespace tempokv
