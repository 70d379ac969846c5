// Scanning one segment file: the shared core of Store::open (recovery) and verify_store_dir.
//
// Walks the record headers from block 1 to the seal record or the end of the written log,
// resynchronizing 4 KiB at a time after a bad header (the next valid header of the same segment
// id ends the resync), and optionally verifies payload checksums. Every record found is reported
// with its state; bad ones are classified:
//   * torn    — damage a crash explains: in an unsealed segment, a header or payload with a zero
//               (never written) sector, a lost header before later data, a record cut by the end
//               of the file;
//   * corrupt — anything else: every defect inside a sealed segment, and non-zero garbage where
//               an unsealed segment should hold a checksummed record.
// Blocking buffered I/O on the calling thread; drops the file from the page cache afterwards.
// Thread-compatible (no shared state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/format.h"

namespace tempokv::store {

enum class RecordState { kGood, kCorrupt, kTorn };

struct ScannedRecord {
  RecordHeader header;
  uint64_t offset = 0;  // of the header block; the payload starts one block later
  RecordState state = RecordState::kGood;
  bool payload_verified = false;
};

enum class PayloadCheck {
  kNever,       // headers only
  kIfUnsealed,  // recovery: a crash can tear payloads only where no seal vouches for them
  kAlways,      // verify_store_dir
};

struct SegmentScan {
  std::optional<SegmentHeader> header;  // nullopt when block 0 is not a valid segment header
  HeaderDefect header_defect = HeaderDefect::kNone;
  // With no valid segment header: some block after block 0 holds data. Creation syncs the header
  // before any record goes in, so such a file is damage to keep, not an interrupted creation.
  bool data_after_header = false;
  bool sealed = false;
  uint64_t file_bytes = 0;
  // Where the valid log ends: the offset after the last record the walk accepted (the seal's
  // offset for a sealed segment).
  uint64_t end_offset = 0;
  std::vector<ScannedRecord> records;  // data records and tombstones in log order; no seal
  uint64_t corrupt = 0;  // bad records that are not records (headers) count here too
  uint64_t torn = 0;
  uint64_t bytes_checked = 0;  // payload bytes whose checksum was computed
  uint64_t reads = 0;  // read calls the scan made (what it costs a file of written zeros)
  std::vector<std::string> problems;  // "segment N offset X: what"
};

// Scans `path`, which the directory listing says holds segment `expected_id`. Errors only when
// the file cannot be opened or read; damage is reported in the result.
Result<SegmentScan> scan_segment(const std::string& path, uint32_t expected_id, PayloadCheck check);

}  // namespace tempokv::store
