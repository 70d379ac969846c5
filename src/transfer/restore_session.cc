#include "transfer/restore_session.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "common/units.h"

namespace tempokv {

Result<RestoreSession> RestoreSession::resolve(Store& store, std::span<const Key> keys) {
  if (keys.empty()) return Status::invalid_argument("restore session has no chunk keys");
  RestoreSession s;
  std::unordered_map<uint32_t, uint32_t> file_of_segment;
  s.extents_.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    std::optional<ObjectInfo> info = store.lookup(keys[i]);
    if (!info) {
      return Status::not_found("chunk " + std::to_string(i) + " of the session (key " +
                               keys[i].to_string() + ") is not in the store");
    }
    auto [it, added] = file_of_segment.try_emplace(info->segment, uint32_t(s.files_.size()));
    if (added) {
      std::string path = store.segment_path(info->segment);
      if (path.empty()) {
        return Status::failed_precondition("segment " + std::to_string(info->segment) +
                                           " has no file (simulated store?)");
      }
      // Pinned before any read: reclamation must not delete a file under the restore.
      TEMPOKV_RETURN_IF_ERROR(store.pin_segment(info->segment));
      s.store_ = &store;
      s.pinned_.push_back(info->segment);
      s.files_.push_back(std::move(path));
    }
    RestoreExtent e;
    e.key = keys[i];
    e.file_index = it->second;
    e.file_offset = info->offset;
    e.payload_bytes = info->payload_bytes;
    e.checksum_lo = info->checksum_lo;
    e.checksum_hi = info->checksum_hi;
    s.extents_.push_back(e);
  }
  s.finish_layout();
  return s;
}

RestoreSession RestoreSession::from_extents(std::vector<std::string> files,
                                            std::vector<RestoreExtent> extents) {
  RestoreSession s;
  s.files_ = std::move(files);
  s.extents_ = std::move(extents);
  s.finish_layout();
  return s;
}

void RestoreSession::finish_layout() {
  uint64_t offset = 0;
  for (auto& e : extents_) {
    e.read_bytes = round_up(e.payload_bytes, kBlockBytes);
    e.device_offset = offset;
    offset += e.read_bytes;
    payload_bytes_ += e.payload_bytes;
    max_read_bytes_ = std::max(max_read_bytes_, e.read_bytes);
  }
  device_bytes_ = offset;
}

void RestoreSession::unpin() {
  if (store_) {
    for (uint32_t seg : pinned_) store_->unpin_segment(seg);
  }
  store_ = nullptr;
  pinned_.clear();
}

RestoreSession::~RestoreSession() { unpin(); }

RestoreSession::RestoreSession(RestoreSession&& o) noexcept
    : store_(std::exchange(o.store_, nullptr)),
      pinned_(std::move(o.pinned_)),
      files_(std::move(o.files_)),
      extents_(std::move(o.extents_)),
      payload_bytes_(o.payload_bytes_),
      device_bytes_(o.device_bytes_),
      max_read_bytes_(o.max_read_bytes_) {
  o.pinned_.clear();
}

RestoreSession& RestoreSession::operator=(RestoreSession&& o) noexcept {
  if (this != &o) {
    unpin();
    store_ = std::exchange(o.store_, nullptr);
    pinned_ = std::move(o.pinned_);
    o.pinned_.clear();
    files_ = std::move(o.files_);
    extents_ = std::move(o.extents_);
    payload_bytes_ = o.payload_bytes_;
    device_bytes_ = o.device_bytes_;
    max_read_bytes_ = o.max_read_bytes_;
  }
  return *this;
}

}  // namespace tempokv
