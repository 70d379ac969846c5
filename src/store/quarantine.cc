// Damage found after the scan: segment files whose header is corrupt (renamed aside, counted
// against capacity, reclaimed before any live segment) and records whose payload fails its
// checksum on get (dropped from the index and tombstoned, so no later claim serves them).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string_view>

#include "store/store_impl.h"

namespace tempokv::store {

Status StoreImpl::quarantine(uint32_t id, const std::string& path) {
  std::error_code ec;
  uint64_t bytes = std::filesystem::file_size(path, ec);
  if (ec) return Status::io_error("size of " + path + ": " + ec.message());
  std::string aside = path + std::string(kQuarantineSuffix);
  if (!options_.read_only) {
    TEMPOKV_RETURN_IF_ERROR(files_.rename(path, aside));
    TEMPOKV_RETURN_IF_ERROR(files_.sync_dir(options_.dir));
  }
  ++stats_.quarantined_segments;
  quarantined_[id] = {options_.read_only ? path : aside, bytes};
  quarantined_bytes_ += bytes;
  live_disk_bytes_ += bytes;
  return Status::ok();
}

Status StoreImpl::adopt_quarantined(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (!name.ends_with(kQuarantineSuffix)) continue;
    auto id = parse_segment_file_name(
        std::string_view(name).substr(0, name.size() - kQuarantineSuffix.size()));
    if (!id) continue;
    uint64_t bytes = entry.file_size(ec);
    if (ec) return Status::io_error("size of " + entry.path().string() + ": " + ec.message());
    ++stats_.quarantined_segments;
    quarantined_[*id] = {entry.path().string(), bytes};
    quarantined_bytes_ += bytes;
    live_disk_bytes_ += bytes;
    next_segment_id_ = std::max(next_segment_id_, *id + 1);
  }
  if (ec) return Status::io_error("list " + dir + ": " + ec.message());
  return Status::ok();
}

Status StoreImpl::remove_reclaimed_leftovers() {
  std::error_code ec;
  bool removed = false;
  for (const auto& entry : std::filesystem::directory_iterator(options_.dir, ec)) {
    std::string name = entry.path().filename().string();
    if (!name.ends_with(kReclaimedSuffix) && !name.ends_with(kNextSuffix)) continue;
    TEMPOKV_RETURN_IF_ERROR(files_.unlink(entry.path().string()));
    removed = true;
  }
  if (ec) return Status::io_error("list " + options_.dir + ": " + ec.message());
  return removed ? files_.sync_dir(options_.dir) : Status::ok();
}

bool StoreImpl::reclaim_quarantined() {
  if (quarantined_.empty() || options_.read_only) return false;
  auto q = quarantined_.begin();
  for (const auto& [id, seg] : segments_) {
    if (seg->state == SegmentState::kReclaimed) continue;
    if (id < q->first) return false;  // a live segment is older: strict oldest-first
    break;
  }
  remove_file_off_loop(q->second.first);
  live_disk_bytes_ -= q->second.second;
  quarantined_bytes_ -= q->second.second;
  quarantined_.erase(q);
  return true;
}

void StoreImpl::drop_corrupt(const Key& key, uint64_t sequence) {
  auto it = index_.find(key);
  if (it == index_.end() || it->second.sequence != sequence) return;  // replaced or gone already
  ++stats_.dropped_records;
  // A write of key on its way was admitted after the corrupt record was indexed, so its sequence
  // is higher: it replaces (put) or hides (remove) that record by itself. A tombstone now would
  // take a higher sequence still and hide an acknowledged put.
  if (options_.read_only || closing_ || in_flight_.contains(key)) {
    index_erase(key);
    return;
  }
  // A tombstone hides every older record of key at the next scan, the corrupt one included.
  RecordHeader h;
  h.flags = kFlagTombstone;
  h.key = key;
  h.aux = kTombstoneCorrupt;
  PendingWrite* w = admit(h, nullptr);
  if (!options_.simulated) prepare_payload(w, nullptr);
  w->prepared = true;
  index_erase(key);  // gone now; durable when the tombstone is
  waiting_.push_back(w);
  place_waiting();
}

}  // namespace tempokv::store
