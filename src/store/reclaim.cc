// Capacity: whole segments are reclaimed strictly oldest-first (so a tombstone never outlives the
// record it hides). A reclaimed segment's objects leave the index at once and the eviction
// listener hears of each (posted, so it may call back into the store); its file is deleted only
// when no read of it is in flight.
#include <unistd.h>

#include <cstdio>

#include "store/store_impl.h"

namespace tempokv::store {

Status StoreImpl::make_room(uint64_t extra_bytes) {
  while (live_disk_bytes_ + extra_bytes > options_.capacity_bytes) {
    if (reclaim_quarantined()) continue;
    Segment* oldest = nullptr;
    for (auto& [id, seg] : segments_) {
      if (seg->state != SegmentState::kReclaimed) {
        oldest = seg.get();
        break;
      }
    }
    if (oldest != nullptr && oldest->reclaimable()) {
      reclaim(*oldest);
      continue;
    }
    if (oldest != nullptr && oldest != active_ && oldest->state == SegmentState::kSealing) {
      return Status::ok();  // over capacity until it seals; its seal reclaims it
    }
    return Status::resource_exhausted(
        "store capacity of " + std::to_string(options_.capacity_bytes) + " bytes is full (" +
        std::to_string(live_disk_bytes_) + " bytes in segments, " + std::to_string(extra_bytes) +
        " more needed) and the oldest segment cannot be reclaimed yet");
  }
  return Status::ok();
}

void StoreImpl::reclaim(Segment& seg) {
  seg.state = SegmentState::kReclaimed;
  live_disk_bytes_ -= seg.bytes;
  ++stats_.reclaimed_segments;
  std::vector<Key> evicted;
  for (const Key& key : seg.keys) {
    auto it = index_.find(key);
    if (it != index_.end() && it->second.segment == seg.id) {
      index_erase(key);
      evicted.push_back(key);
    }
  }
  seg.keys.clear();
  seg.keys.shrink_to_fit();
  stats_.reclaimed_objects += evicted.size();
  maybe_destroy(seg);
  if (listener_ && !evicted.empty()) {
    ++ops_in_flight_;
    executor_.post([this, evicted = std::move(evicted)] {
      for (const Key& k : evicted) {
        if (listener_) listener_(k);
      }
      --ops_in_flight_;
      maybe_finish_close();
    });
  }
}

void StoreImpl::maybe_destroy(Segment& seg) {
  if (seg.state == SegmentState::kReclaimed && seg.readers == 0 && seg.writes_in_flight == 0 &&
      !seg.sync_in_flight) {
    destroy(seg);
  }
}

void StoreImpl::remove_file_off_loop(const std::string& path) {
  std::string aside = path + std::string(kReclaimedSuffix);
  if (!files_.rename(path, aside).is_ok()) {
    if (files_.unlink(path).is_ok()) (void)files_.sync_dir(options_.dir);
    return;
  }
  unlinker_.run([this, aside] {
    if (files_.unlink(aside).is_ok()) (void)files_.sync_dir(options_.dir);
  });
}

void StoreImpl::destroy(Segment& seg) {
  engine_.remove_file(seg.file);
  if (seg.fd >= 0) ::close(seg.fd);
  // Renamed at once (a metadata update, microseconds), deleted and the directory synced on the
  // unlinker thread: unlinking a 1 GiB file frees its extents and took 100-180 ms on the loop.
  // open() deletes a *.reclaimed leftover; the directory sync keeps a lost deletion from bringing
  // the store back above its capacity (which open() would refuse).
  if (!seg.path.empty()) remove_file_off_loop(seg.path);
  segments_.erase(seg.id);
}

}  // namespace tempokv::store
