// verify_store_dir: every record of every segment, payload checksums included, read-only.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <utility>

#include "store/dir_lock.h"
#include "store/format.h"
#include "store/scan.h"
#include "store/store.h"

namespace tempokv {

Result<VerifyReport> verify_store_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::not_found("store directory " + dir + " does not exist");
  // Shared, so that no writer appends or reclaims mid-walk (and a live daemon is named as such).
  TEMPOKV_ASSIGN_OR_RETURN(int lock_fd, store::lock_store_dir(dir, store::LockMode::kShared));
  struct Unlock {
    int fd;
    ~Unlock() {
      if (fd >= 0) ::close(fd);
    }
  } unlock{lock_fd};
  std::vector<uint32_t> ids;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (auto id = store::parse_segment_file_name(entry.path().filename().string())) {
      ids.push_back(*id);
    }
  }
  if (ec) return Status::io_error("list " + dir + ": " + ec.message());
  std::sort(ids.begin(), ids.end());
  VerifyReport report;
  std::vector<std::pair<uint32_t, VerifyReport::Quarantined>> quarantined;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (!name.ends_with(store::kQuarantineSuffix)) continue;
    auto id = store::parse_segment_file_name(
        std::string_view(name).substr(0, name.size() - store::kQuarantineSuffix.size()));
    if (!id) continue;
    std::error_code size_ec;
    uint64_t bytes = entry.file_size(size_ec);
    if (size_ec) return Status::io_error("size of " + entry.path().string() + ": " + size_ec.message());
    quarantined.push_back({*id, {name, bytes}});
  }
  if (ec) return Status::io_error("list " + dir + ": " + ec.message());
  std::sort(quarantined.begin(), quarantined.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [id, q] : quarantined) report.quarantined.push_back(std::move(q));
  for (uint32_t id : ids) {
    std::string path = dir + "/" + store::segment_file_name(id);
    TEMPOKV_ASSIGN_OR_RETURN(store::SegmentScan scan,
                             store::scan_segment(path, id, store::PayloadCheck::kAlways));
    ++report.segments;
    report.corrupt += scan.corrupt;
    report.torn += scan.torn;
    report.bytes_checked += scan.bytes_checked;
    report.problems.insert(report.problems.end(), scan.problems.begin(), scan.problems.end());
    if (!scan.header) {
      // Only the newest segment can be caught mid-creation (Store::open removes it).
      bool crash_shaped = scan.header_defect == store::HeaderDefect::kZero ||
                          scan.header_defect == store::HeaderDefect::kTorn;
      (crash_shaped && id == ids.back() ? report.torn : report.corrupt)++;
      continue;
    }
    for (const store::ScannedRecord& r : scan.records) {
      if (r.state != store::RecordState::kGood) continue;
      (r.header.tombstone() ? report.tombstones : report.good)++;
      if (r.header.tombstone() && r.header.aux == store::kTombstoneCorrupt) ++report.dropped;
    }
  }
  return report;
}

Result<RecordedSizes> recorded_store_sizes(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<uint32_t> ids;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (auto id = store::parse_segment_file_name(entry.path().filename().string())) {
      ids.push_back(*id);
    }
  }
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return RecordedSizes{};
    return Status::io_error("list " + dir + ": " + ec.message());
  }
  std::sort(ids.rbegin(), ids.rend());
  for (uint32_t id : ids) {
    const std::string path = dir + "/" + store::segment_file_name(id);
    alignas(kBlockBytes) std::byte block[store::kHeaderBytes]{};
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // gone meanwhile
    const ssize_t n = ::pread(fd, block, sizeof block, 0);
    ::close(fd);
    if (n != static_cast<ssize_t>(sizeof block)) continue;
    const store::DecodedSegmentHeader h = store::decode_segment_header(block);
    if (h.defect == store::HeaderDefect::kNone && h.header.segment_id == id) {
      return RecordedSizes{h.header.segment_bytes, h.header.capacity_bytes};
    }
  }
  return RecordedSizes{};
}

}  // namespace tempokv
