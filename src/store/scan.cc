#include "store/scan.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <vector>

#include "common/checksum.h"
#include "common/file_io.h"

namespace tempokv::store {
namespace {

// The scan's read buffer (payload checks, runs of written zeros), one per thread.
constexpr size_t kScanChunk = 8 * kMiB;
std::byte* scan_buffer() {
  static thread_local std::unique_ptr<std::byte[]> buf(new std::byte[kScanChunk]);
  return buf.get();
}

class ScanFile {
 public:
  ~ScanFile() {
    if (fd_ >= 0) {
      posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);  // a scan should not evict the hot set
      close(fd_);
    }
  }
  Status open(const std::string& path) {
    path_ = path;
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return Status::from_errno(errno, "open " + path);
    off_t end = lseek(fd_, 0, SEEK_END);
    if (end < 0) return Status::from_errno(errno, "lseek " + path);
    bytes_ = static_cast<uint64_t>(end);
    return Status::ok();
  }
  // Reads exactly len bytes (fewer only at end of file: the count is returned).
  Result<size_t> read(uint64_t offset, void* buf, size_t len) const {
    ++reads_;
    return pread_range(fd_, buf, len, offset).result("pread " + path_);
  }
  // The first offset >= from that may hold data (SEEK_DATA), or bytes() when none does.
  uint64_t next_data(uint64_t from) const {
    if (from >= bytes_) return bytes_;
    off_t d = lseek(fd_, static_cast<off_t>(from), SEEK_DATA);
    if (d < 0) return errno == ENXIO ? bytes_ : from;  // unsupported: read on from here
    return static_cast<uint64_t>(d) / kBlockBytes * kBlockBytes;
  }
  // The first offset >= from (block-aligned) whose block is not all zeros, or an offset past the
  // last whole block when none is. Holes are skipped by SEEK_DATA; zeros that
  // were written (a segment copied by a tool that does not keep holes, a file system without
  // SEEK_DATA) are read a megabyte at a time: block by block, a 64 MiB segment's free space was
  // 16,384 reads and seeks, a second of a daemon's start.
  Result<uint64_t> next_nonzero_block(uint64_t from) const {
    constexpr size_t kChunk = 1 * kMiB;  // a record found early costs no more than this read
    static_assert(kChunk <= kScanChunk);
    std::byte* buf = scan_buffer();
    uint64_t pos = next_data(from);
    while (pos + kBlockBytes <= bytes_) {
      const uint64_t whole_blocks = (bytes_ - pos) / kBlockBytes * kBlockBytes;
      const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, whole_blocks));
      TEMPOKV_ASSIGN_OR_RETURN(size_t n, read(pos, buf, want));
      for (size_t b = 0; b + kBlockBytes <= n; b += kBlockBytes) {
        if (!all_zero(buf + b, kBlockBytes)) return pos + b;
      }
      if (n < want) return bytes_;  // the file ended early
      pos = next_data(pos + n);
    }
    return pos;
  }
  uint64_t bytes() const { return bytes_; }
  uint64_t reads() const { return reads_; }

 private:
  mutable uint64_t reads_ = 0;
  std::string path_;
  int fd_ = -1;
  uint64_t bytes_ = 0;
};

// A bad spot found by the header walk; classified once the walk knows whether a seal exists.
struct BadSpot {
  uint64_t offset;
  std::string what;
  bool crash_shaped;  // zero sectors or a cut-off record: what a torn write leaves
};

std::string where(uint32_t id, uint64_t offset) {
  return "segment " + std::to_string(id) + " offset " + std::to_string(offset) + ": ";
}

struct Walker {
  const ScanFile& file;
  uint32_t id;
  SegmentScan& scan;
  std::vector<BadSpot> bad;
  uint64_t seal_records = 0;  // what the seal says was written before it

  Status walk() {
    alignas(kBlockBytes) static thread_local std::byte block[kHeaderBytes];
    uint64_t off = kHeaderBytes;
    bool resyncing = false;               // inside the wreck of a bad record
    constexpr uint64_t kNoGap = UINT64_MAX;
    uint64_t zero_gap = kNoGap;           // offset of a zero header block with nothing after it yet
    while (off + kHeaderBytes <= file.bytes()) {
      TEMPOKV_ASSIGN_OR_RETURN(size_t n, file.read(off, block, kHeaderBytes));
      if (n < kHeaderBytes) break;
      DecodedRecordHeader d = decode_record_header(std::span<const std::byte, kHeaderBytes>(block));
      if (d.defect == HeaderDefect::kZero) {
        if (!resyncing && zero_gap == kNoGap) zero_gap = off;
        TEMPOKV_ASSIGN_OR_RETURN(uint64_t next, file.next_nonzero_block(off + kBlockBytes));
        off = std::max(off + kBlockBytes, next);
        continue;
      }
      if (zero_gap != kNoGap && !resyncing) {
        // Data after a never-written header: a record whose header was lost.
        bad.push_back({zero_gap, "record header missing (zero block) before later data", true});
        resyncing = true;
      }
      zero_gap = kNoGap;
      const RecordHeader& h = d.header;
      if (d.defect == HeaderDefect::kNone && h.segment_id != id) {
        d.defect = HeaderDefect::kBadField;  // a header of another segment cannot be ours
      }
      if (d.defect != HeaderDefect::kNone) {
        if (!resyncing) {
          bad.push_back({off, std::string(header_defect_name(d.defect)),
                         d.defect == HeaderDefect::kTorn});
        }
        resyncing = true;
        off += kBlockBytes;
        continue;
      }
      resyncing = false;
      if (h.seal()) {
        scan.sealed = true;
        seal_records = h.aux;
        scan.end_offset = off;
        return Status::ok();
      }
      if (off + h.record_bytes() > file.bytes()) {
        bad.push_back({off, "record of " + std::to_string(h.payload_bytes) +
                                " payload bytes runs past the end of the file", true});
        break;
      }
      scan.records.push_back({h, off, RecordState::kGood, false});
      off += h.record_bytes();
      scan.end_offset = off;
    }
    return Status::ok();  // trailing zeros are free space
  }
};

// Reads a payload (padded to 4 KiB) and checks it against its header.
Status verify_payload(const ScanFile& file, ScannedRecord& r, SegmentScan& scan, uint32_t id) {
  std::byte* buf = scan_buffer();
  Xxh3Stream hash;
  bool zero_sector = false;
  uint64_t left = r.header.payload_bytes;
  uint64_t pos = r.offset + kHeaderBytes;
  Status st;
  while (left > 0) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(left, kScanChunk));
    Result<size_t> n = file.read(pos, buf, want);
    if (!n.is_ok() || *n < want) {
      st = n.is_ok() ? Status::ok() : n.status();
      zero_sector = true;  // a short file is a cut-off record
      break;
    }
    hash.update(buf, want);
    zero_sector = zero_sector || has_zero_sector(buf, want);
    left -= want;
    pos += want;
  }
  Hash128 h = hash.digest();
  TEMPOKV_RETURN_IF_ERROR(st);
  scan.bytes_checked += r.header.payload_bytes;
  r.payload_verified = true;
  if (left == 0 && Checksum128{h.low, h.high} == r.header.payload_checksum) return Status::ok();
  bool torn = !scan.sealed && zero_sector;
  r.state = torn ? RecordState::kTorn : RecordState::kCorrupt;
  (torn ? scan.torn : scan.corrupt)++;
  scan.problems.push_back(where(id, r.offset) + "payload checksum mismatch (key " +
                          r.header.key.to_string() + ", " + (torn ? "torn" : "corrupt") + ")");
  return Status::ok();
}

}  // namespace

Result<SegmentScan> scan_segment(const std::string& path, uint32_t expected_id,
                                 PayloadCheck check) {
  ScanFile file;
  TEMPOKV_RETURN_IF_ERROR(file.open(path));
  SegmentScan scan;
  scan.file_bytes = file.bytes();
  alignas(kBlockBytes) std::byte block[kHeaderBytes]{};
  TEMPOKV_ASSIGN_OR_RETURN(size_t n, file.read(0, block, kHeaderBytes));
  DecodedSegmentHeader sh = decode_segment_header(std::span<const std::byte, kHeaderBytes>(block));
  if (n < kHeaderBytes) sh.defect = HeaderDefect::kTorn;
  if (sh.defect == HeaderDefect::kNone && sh.header.segment_id != expected_id) {
    sh.defect = HeaderDefect::kBadField;
  }
  scan.header_defect = sh.defect;
  if (sh.defect != HeaderDefect::kNone) {
    scan.problems.push_back(where(expected_id, 0) + "segment header: " +
                            std::string(header_defect_name(sh.defect)));
    TEMPOKV_ASSIGN_OR_RETURN(uint64_t data, file.next_nonzero_block(kHeaderBytes));
    scan.data_after_header = data + kBlockBytes <= file.bytes();
    scan.reads = file.reads();
    return scan;
  }
  scan.header = sh.header;
  scan.end_offset = kHeaderBytes;
  Walker walker{file, expected_id, scan, {}};
  TEMPOKV_RETURN_IF_ERROR(walker.walk());
  for (const BadSpot& b : walker.bad) {
    bool torn = !scan.sealed && b.crash_shaped;
    (torn ? scan.torn : scan.corrupt)++;
    scan.problems.push_back(where(expected_id, b.offset) + b.what + (torn ? " (torn)" : " (corrupt)"));
  }
  // A seal vouches for the records before it only if the walk found exactly those: a header that
  // passes its checksum yet hides a neighbour (a forged or misdirected write) shows up here.
  bool seal_trusted = !scan.sealed || walker.seal_records == scan.records.size() ||
                      !walker.bad.empty();  // the count is off by the bad spots already reported
  if (!seal_trusted) {
    ++scan.corrupt;
    scan.problems.push_back(where(expected_id, scan.end_offset) + "seal counts " +
                            std::to_string(walker.seal_records) + " records, the log holds " +
                            std::to_string(scan.records.size()) + " (corrupt)");
  }
  bool check_payloads = check == PayloadCheck::kAlways || !seal_trusted ||
                        (check == PayloadCheck::kIfUnsealed && !scan.sealed);
  if (check_payloads) {
    for (ScannedRecord& r : scan.records) {
      if (r.header.payload_bytes > 0) {
        TEMPOKV_RETURN_IF_ERROR(verify_payload(file, r, scan, expected_id));
      }
    }
  }
  scan.reads = file.reads();
  return scan;
}

}  // namespace tempokv::store
