#include "tempokv/fio.h"

#include <algorithm>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

extern char** environ;

namespace tempokv::cli {
namespace {

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::vector<std::string> fio_args(const FioJob& job, const std::string& output) {
  std::vector<std::string> a = {"fio", "--output-format=json", "--output=" + output,
                                "--rw=" + job.rw,
                                "--ioengine=" + job.ioengine,
                                std::string("--direct=") + (job.direct ? "1" : "0"),
                                "--bs=" + std::to_string(job.block_bytes),
                                "--iodepth=" + std::to_string(job.iodepth)};
  a.insert(a.end(), job.extra_args.begin(), job.extra_args.end());
  // Options before the first --name are global; each --name starts a job.
  for (size_t i = 0; i < job.ranges.size(); ++i) {
    const FioJob::Range& r = job.ranges[i];
    a.push_back("--name=" + job.name + "-" + std::to_string(i));
    a.push_back("--filename=" + r.path);
    a.push_back("--offset=" + std::to_string(r.offset_bytes));
    a.push_back("--size=" + std::to_string(r.size_bytes));
    if (r.block_bytes != 0) a.push_back("--bs=" + std::to_string(r.block_bytes));
    if (r.zone_bytes != 0) {
      a.push_back("--rw=read");  // the gaps are the zones' skips, not read:<gap>
      a.push_back("--zonemode=strided");
      a.push_back("--zonesize=" + std::to_string(r.zone_bytes));
      a.push_back("--zoneskip=" + std::to_string(r.zone_skip_bytes));
      a.push_back("--io_size=" + std::to_string(r.io_bytes));
    }
    a.push_back("--stonewall");
  }
  if (!job.ranges.empty()) return a;
  a.push_back("--name=" + job.name);
  if (!job.filenames.empty()) {
    std::string joined;
    for (const auto& f : job.filenames) joined += (joined.empty() ? "" : ":") + f;
    a.push_back("--filename=" + joined);
  }
  if (job.offset_bytes > 0) a.push_back("--offset=" + std::to_string(job.offset_bytes));
  if (job.size_bytes > 0) a.push_back("--size=" + std::to_string(job.size_bytes));
  if (!job.read_iolog.empty()) {
    a.push_back("--read_iolog=" + job.read_iolog);
    a.push_back("--replay_no_stall=1");
  }
  return a;
}

// This process's environment, with glibc.malloc.hugetlb=1 added to GLIBC_TUNABLES when asked
// (glibc >= 2.35: malloc madvises its mmapped chunks MADV_HUGEPAGE; older glibc ignores it).
std::vector<std::string> fio_environment(bool huge_pages) {
  std::vector<std::string> env;
  std::string tunables;
  for (char** e = environ; *e; ++e) {
    std::string v = *e;
    if (v.rfind("GLIBC_TUNABLES=", 0) == 0) tunables = v.substr(15);
    else env.push_back(std::move(v));
  }
  if (huge_pages) tunables += (tunables.empty() ? "" : ":") + std::string("glibc.malloc.hugetlb=1");
  if (!tunables.empty()) env.push_back("GLIBC_TUNABLES=" + tunables);
  return env;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<FioResult> run_fio(const FioJob& job) {
  if (!on_path("fio")) return Status::unavailable("fio is not installed (no fio in PATH)");
  std::string output = "/tmp/tempokv-fio-" + std::to_string(getpid()) + ".json";
  std::vector<std::string> args = fio_args(job, output);
  FioResult result;
  std::vector<char*> argv;
  if (job.huge_pages) result.command = "GLIBC_TUNABLES=glibc.malloc.hugetlb=1";
  for (auto& s : args) {
    argv.push_back(s.data());
    result.command += (result.command.empty() ? "" : " ") + s;
  }
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = fio_environment(job.huge_pages);
  std::vector<char*> env;
  for (auto& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, "fio", nullptr, nullptr, argv.data(), env.data());
  if (rc != 0) return Status::from_errno(rc, "start fio");
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  std::string text = read_file(output);
  unlink(output.c_str());
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return Status::io_error("fio failed (" + result.command + "): " +
                            text.substr(text.size() > 400 ? text.size() - 400 : 0));
  }
  Result<FioResult> parsed = parse_fio_output(text, !job.ranges.empty());
  if (!parsed.is_ok()) return parsed.status();
  parsed->command = std::move(result.command);
  return parsed;
}

Result<FioResult> parse_fio_output(const std::string& text, bool sequential_jobs) {
  FioResult result;
  // fio may print notes before the JSON document.
  size_t start = text.find('{');
  auto json = nlohmann::json::parse(start == std::string::npos ? "" : text.substr(start), nullptr,
                                    false);
  if (json.is_discarded() || !json.contains("jobs") || json["jobs"].empty()) {
    return Status::io_error("fio printed no JSON jobs: " + text.substr(0, 400));
  }
  bool first = true;
  for (const auto& j : json["jobs"]) {
    const auto& r = j["read"];
    const auto& w = j["write"];
    result.read_bytes += r.value("io_bytes", uint64_t{0});
    result.read_ios += r.value("total_ios", uint64_t{0});
    result.read_bytes_per_s += r.value("bw_bytes", 0.0);
    double runtime_s = r.value("runtime", 0.0) / 1e3;
    result.read_runtime_s = !sequential_jobs ? std::max(result.read_runtime_s, runtime_s)
                                               : result.read_runtime_s + runtime_s;
    result.write_bytes += w.value("io_bytes", uint64_t{0});
    result.write_bytes_per_s += w.value("bw_bytes", 0.0);
    const double ios = r.value("total_ios", 0.0);
    if (j.contains("iodepth_level")) {
      for (const auto& [bucket, pct] : j["iodepth_level"].items()) {
        const uint32_t low = bucket == ">=64" ? 64 : static_cast<uint32_t>(std::stoul(bucket));
        result.depth_shares[low] += pct.get<double>() / 100 * ios;
      }
    }
    if (first && r.contains("clat_ns")) result.read_lat_mean_us = r["clat_ns"].value("mean", 0.0) / 1e3;
    first = false;
  }
  if (result.read_ios > 0) {
    for (auto& [low, share] : result.depth_shares) share /= static_cast<double>(result.read_ios);
  }
  // Jobs of FioJob::ranges run one after another (stonewall): their bandwidths do not add up; the
  // rate is all bytes over all runtime. Concurrent jobs' bandwidths do add up.
  if (sequential_jobs && result.read_runtime_s > 0) {
    result.read_bytes_per_s = static_cast<double>(result.read_bytes) / result.read_runtime_s;
  }
  return result;
}

double FioResult::share_at_depth(uint32_t depth) const {
  uint32_t bucket = 1;
  while (bucket * 2 <= std::min<uint32_t>(depth, 64)) bucket *= 2;
  double share = 0;
  for (const auto& [low, s] : depth_shares) {
    if (low >= bucket) share += s;
  }
  return share;
}

Status write_fio_read_log(const std::string& log_path, const std::vector<FioReadExtent>& reads) {
  std::ofstream out(log_path);
  if (!out) return Status::from_errno(errno, "create fio iolog " + log_path);
  out << "fio version 2 iolog\n";
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (const auto& r : reads) {
    if (seen.insert(r.path).second) files.push_back(r.path);
  }
  for (const auto& f : files) out << f << " add\n";
  for (const auto& f : files) out << f << " open\n";
  for (const auto& r : reads) out << r.path << " read " << r.offset << " " << r.bytes << "\n";
  for (const auto& f : files) out << f << " close\n";
  out.flush();
  if (!out) return Status::io_error("write fio iolog " + log_path);
  return Status::ok();
}

namespace {

// Reads back to back in one file, as one record: its payload and how many requests read it.
struct Record {
  std::string path;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint64_t pieces = 0;
  uint64_t end() const { return offset + bytes; }
};

std::vector<Record> records_of(const std::vector<FioReadExtent>& sorted) {
  std::vector<Record> out;
  for (const FioReadExtent& r : sorted) {
    if (!out.empty() && out.back().path == r.path && out.back().end() == r.offset) {
      out.back().bytes += r.bytes;
      ++out.back().pieces;
      continue;
    }
    out.push_back({r.path, r.offset, r.bytes, 1});
  }
  return out;
}

// fio's request size for a record read in `pieces` requests: the record in equal requests of
// whole 4 KiB blocks, as few as that allows, no more than twice as many as the path made (a
// 24 MiB chunk read as 16 + 8 MiB is two 12 MiB requests to fio). 0 when the record's size
// allows no such split.
uint64_t equal_piece_bytes(const Record& r) {
  constexpr uint64_t kBlock = 4096;
  if (r.bytes % kBlock != 0) return r.pieces == 1 ? r.bytes : 0;
  const uint64_t blocks = r.bytes / kBlock;
  for (uint64_t n = r.pieces; n <= 2 * r.pieces && n <= blocks; ++n) {
    if (blocks % n == 0) return r.bytes / n;
  }
  return 0;
}

}  // namespace

Result<FioJob> fio_job_for_extents(std::vector<FioReadExtent> reads, uint64_t gap_bytes,
                                   uint32_t depth) {
  if (reads.empty()) return Status::invalid_argument("fio: no reads to compare with");
  std::sort(reads.begin(), reads.end(), [](const FioReadExtent& a, const FioReadExtent& b) {
    return a.path != b.path ? a.path < b.path : a.offset < b.offset;
  });
  const std::vector<Record> records = records_of(reads);
  FioJob job;
  job.name = "same-extents";
  job.rw = gap_bytes ? "read:" + std::to_string(gap_bytes) : "read";
  job.iodepth = depth;
  job.extra_args = {"--fixedbufs", "--registerfiles"};
  // A run: records of one size and request size, each gap_bytes after the last. It is one fio
  // job (a range) at `depth`: one request per record goes as read:<gap>; several per record as
  // a strided stream (a zone per record, the gap skipped), so depth is kept across the pieces of
  // a record as across records. Runs are jobs one after another.
  uint64_t run_piece = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    const uint64_t piece = equal_piece_bytes(r);
    if (piece == 0) {
      return Status::failed_precondition("fio: a record of " + std::to_string(r.bytes) +
                                         " bytes at " + r.path + ":" + std::to_string(r.offset) +
                                         " splits into no equal requests of whole blocks");
    }
    if (i == 0) job.block_bytes = piece;
    const Record* prev = i > 0 ? &records[i - 1] : nullptr;
    const bool continues = prev != nullptr && prev->path == r.path && prev->bytes == r.bytes &&
                           run_piece == piece && r.offset == prev->end() + gap_bytes;
    if (!continues) {
      if (job.ranges.size() == 256) {
        return Status::failed_precondition("fio: the reads are scattered over more than 256 runs");
      }
      FioJob::Range range{r.path, r.offset, 0, piece == job.block_bytes ? 0 : piece};
      if (piece != r.bytes) {
        range.zone_bytes = r.bytes;
        range.zone_skip_bytes = gap_bytes;
      }
      job.ranges.push_back(range);
      run_piece = piece;
    }
    FioJob::Range& range = job.ranges.back();
    range.size_bytes = r.end() - range.offset_bytes;
    if (range.zone_bytes != 0) range.io_bytes += r.bytes;
  }
  return job;
}

}  // namespace tempokv::cli
