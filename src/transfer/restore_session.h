// RestoreSession: the resolved descriptors of one restore — where each chunk of a session lies on
// SSD and where it lands in device memory — with the store's segments pinned against reclamation
// for as long as the session object lives (NIXL's "prepare": resolve once, off the data path).
//
// Device layout: chunk i lands at device_offset_i = the sum of read_bytes of the chunks before it
// (each slot 4 KiB-aligned and 4 KiB-padded, so O_DIRECT and cuFile reads land in place);
// device_bytes is the buffer size a restore needs.
//
// Thread safety: resolve() and the destructor run on the store's Executor thread (they pin and
// unpin segments). The descriptors are immutable and may be read from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "store/store.h"
#include "tempokv/key.h"
#include "tempokv/status.h"

namespace tempokv {

struct RestoreExtent {
  Key key;
  uint32_t file_index = 0;     // into RestoreSession::files()
  uint64_t file_offset = 0;    // payload offset in the segment file (4 KiB-aligned)
  uint64_t payload_bytes = 0;  // exact payload length
  uint64_t read_bytes = 0;     // payload rounded up to 4 KiB: what an aligned read transfers
  uint64_t device_offset = 0;  // where the payload lands in the device buffer (4 KiB-aligned)
  uint64_t checksum_lo = 0;    // XXH3-128 of the payload
  uint64_t checksum_hi = 0;
};

class RestoreSession {
 public:
  // Looks up every key in order and pins the segments holding them. NotFound names the first
  // missing key and its position; an empty key list is InvalidArgument.
  static Result<RestoreSession> resolve(Store& store, std::span<const Key> keys);
  RestoreSession() = default;
  ~RestoreSession();
  RestoreSession(RestoreSession&& o) noexcept;
  RestoreSession& operator=(RestoreSession&& o) noexcept;
  RestoreSession(const RestoreSession&) = delete;
  RestoreSession& operator=(const RestoreSession&) = delete;

  const std::vector<RestoreExtent>& extents() const { return extents_; }
  // Segment file paths, indexed by RestoreExtent::file_index.
  const std::vector<std::string>& files() const { return files_; }
  uint64_t payload_bytes() const { return payload_bytes_; }
  uint64_t device_bytes() const { return device_bytes_; }
  // Largest read_bytes of any extent.
  uint64_t max_read_bytes() const { return max_read_bytes_; }

  // For tests and simulated restores: descriptors without a store (nothing pinned).
  static RestoreSession from_extents(std::vector<std::string> files,
                                     std::vector<RestoreExtent> extents);

 private:
  void unpin();
  void finish_layout();

  Store* store_ = nullptr;         // set when segments are pinned
  std::vector<uint32_t> pinned_;   // segment ids pinned in store_
  std::vector<std::string> files_;
  std::vector<RestoreExtent> extents_;
  uint64_t payload_bytes_ = 0;
  uint64_t device_bytes_ = 0;
  uint64_t max_read_bytes_ = 0;
};

}  // namespace tempokv
