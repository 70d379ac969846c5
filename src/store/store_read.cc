// The read side: get (straight into the caller's aligned buffer, checksum verified on one of the
// engine's hook threads; a mismatch drops the object, quarantine.cc), lookup, list and stats.
#include <algorithm>
#include <cstdio>

#include "store/store_impl.h"

namespace tempokv::store {

void StoreImpl::get(const Key& key, void* dst, size_t dst_bytes, ReadCallback cb) {
  std::string what = "get of key " + key.to_string() + ": ";
  auto fail = [&](Status st) {
    ++stats_.failed_gets;
    executor_.post([cb = std::move(cb), st = std::move(st)] { cb(st); });
  };
  if (closing_) return fail(Status::failed_precondition(what + "the store is closing"));
  auto it = index_.find(key);
  if (it == index_.end()) return fail(Status::not_found(what + "not in the store"));
  const Entry e = it->second;
  uint64_t need = round_up(e.payload_bytes, kBlockBytes);
  bool no_bytes = options_.simulated && dst == nullptr;
  if (!no_bytes) {
    if (dst == nullptr) return fail(Status::invalid_argument(what + "destination buffer is null"));
    if (!is_aligned(dst, kBlockBytes)) {
      char addr[32];
      std::snprintf(addr, sizeof addr, "%p", dst);
      return fail(Status::invalid_argument(what + "destination buffer " + addr +
                                           " is not 4 KiB-aligned"));
    }
    if (dst_bytes < need) {
      return fail(Status::invalid_argument(
          what + "destination buffer of " + std::to_string(dst_bytes) + " bytes is smaller than " +
          std::to_string(need) + " (payload " + std::to_string(e.payload_bytes) +
          " bytes rounded up to 4 KiB)"));
    }
  }
  Segment& seg = *segments_.at(e.segment);
  ++seg.readers;
  ++ops_in_flight_;
  ++gets_at_engine_;
  IoThreadHook verify;
  if (options_.verify_reads && !no_bytes && !options_.simulated) {
    // Runs on one of the engine's hook threads, several gets' at once (SsdEngineOptions::
    // hook_threads): it reads only dst and copies of its own, and options_ is fixed since open.
    verify = [this, dst, e, key](size_t bytes) -> Status {
      if (bytes < e.payload_bytes) return Status::ok();  // reported as a short read below
      if (options_.on_io_thread_for_testing) options_.on_io_thread_for_testing("verify");
      if (checksum128(dst, e.payload_bytes) == e.checksum) return Status::ok();
      return Status::corruption("payload checksum mismatch for key " + key.to_string() +
                                " in segment " + std::to_string(e.segment) + " at offset " +
                                std::to_string(e.offset));
    };
  }
  engine_.read(
      seg.file, e.offset, no_bytes ? nullptr : dst, need,
      [this, &seg, e, need, key, cb = std::move(cb)](Result<size_t> r) {
        --seg.readers;
        --ops_in_flight_;
        --gets_at_engine_;
        maybe_destroy(seg);
        Status st = r.status();
        if (st.is_ok() && *r < need) {
          st = Status::io_error("short read of key " + key.to_string() + " from segment " +
                                std::to_string(e.segment) + ": " + std::to_string(*r) + " of " +
                                std::to_string(need) + " bytes");
        }
        if (st.is_ok()) {
          ++stats_.gets;
          stats_.get_bytes += e.payload_bytes;
          cb(e.payload_bytes);
        } else {
          ++stats_.failed_gets;
          if (st.code() == StatusCode::kCorruption) {
            ++stats_.checksum_failures;
            drop_corrupt(key, e.sequence);
          }
          cb(st);
        }
        // After cb: a get it issues keeps the device for reads.
        if (gets_at_engine_ == 0) pump_writes();
        maybe_finish_close();
      },
      std::move(verify));
}

std::optional<ObjectInfo> StoreImpl::lookup(const Key& key) const {
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  const Entry& e = it->second;
  return info(key, e);
}

std::vector<ObjectInfo> StoreImpl::list() const {
  std::vector<ObjectInfo> out;
  out.reserve(index_.size());
  for (const auto& [key, e] : index_) {
    out.push_back(info(key, e));
  }
  std::sort(out.begin(), out.end(), [](const ObjectInfo& a, const ObjectInfo& b) {
    return a.segment != b.segment ? a.segment < b.segment : a.offset < b.offset;
  });
  return out;
}

std::string StoreImpl::segment_path(uint32_t segment) const {
  auto it = segments_.find(segment);
  return it == segments_.end() ? std::string() : it->second->path;
}

Status StoreImpl::pin_segment(uint32_t segment) {
  auto it = segments_.find(segment);
  if (it == segments_.end() || it->second->state == SegmentState::kReclaimed) {
    return Status::not_found("pin_segment: segment " + std::to_string(segment) + " is not live");
  }
  ++it->second->readers;  // a pin is a reader that get() did not start
  return Status::ok();
}

void StoreImpl::unpin_segment(uint32_t segment) {
  auto it = segments_.find(segment);
  if (it == segments_.end() || it->second->readers == 0) return;
  --it->second->readers;
  maybe_destroy(*it->second);
}

StoreStats StoreImpl::stats() const {
  StoreStats s = stats_;
  s.objects = index_.size();
  s.live_bytes = live_payload_bytes_;
  s.spare_bytes = next_state_ == NextState::kNone ? 0 : options_.segment_bytes;
  s.disk_bytes = live_disk_bytes_ - s.spare_bytes;
  s.quarantined_segments = quarantined_.size();
  s.quarantined_bytes = quarantined_bytes_;
  s.segments = 0;
  for (const auto& [id, seg] : segments_) {
    if (seg->state != SegmentState::kReclaimed) ++s.segments;
  }
  return s;
}

}  // namespace tempokv::store
