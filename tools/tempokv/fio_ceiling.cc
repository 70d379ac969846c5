#include "fio_ceiling.h"

#include <unistd.h>

#include <map>
#include <set>

#include <fmt/format.h>

#include "common/percentile.h"
#include "common/resource_usage.h"
#include "common/units.h"

namespace tempokv::cli {
namespace {

Result<FioDepthRun> run_same_reads(const std::vector<FioReadExtent>& reads, uint32_t depth,
                                   const FioCompareOptions& options) {
  // Sequential streams over the same payloads when the reads have that shape (whole chunks of one
  // size, back to back in the store); otherwise a replay of the exact reads.
  Result<FioJob> job = fio_job_for_extents(reads, kBlockBytes, depth);
  std::string log;
  if (!job.is_ok()) {
    if (!options.allow_replay) return job.status();
    log = "/tmp/tempokv-fio-replay-" + std::to_string(getpid()) + ".iolog";
    TEMPOKV_RETURN_IF_ERROR(write_fio_read_log(log, reads));
    FioJob replay;
    replay.name = "replay";
    replay.block_bytes = reads.front().bytes;  // sizes the buffers; the log sizes each request
    replay.iodepth = 1;
    replay.read_iolog = log;
    replay.extra_args = {"--fixedbufs=1", "--thread=1"};
    job = replay;
  } else {
    job->name = "same-extents";
  }
  job->huge_pages = options.huge_pages;
  std::set<std::string> files;
  for (const FioReadExtent& r : reads) files.insert(r.path);
  for (const std::string& f : files) (void)drop_page_cache(f);
  Result<FioResult> r = run_fio(*job);
  if (!log.empty()) unlink(log.c_str());
  if (!r.is_ok()) return r.status();
  if (r->read_bytes_per_s <= 0) return Status::internal("fio read nothing");
  uint64_t expected = 0;
  for (const FioReadExtent& e : reads) expected += e.bytes;
  if (r->read_bytes != expected) {
    // Not the same bytes, so not a reference for them.
    return Status::internal("fio read " + std::to_string(r->read_bytes) + " bytes, not the " +
                            std::to_string(expected) + " of the compared reads: " + r->command);
  }
  return FioDepthRun{job->iodepth, r->read_bytes_per_s / 1e9, r->read_bytes, r->command,
                     r->share_at_depth(job->iodepth)};
}

}  // namespace

Result<double> run_fio_same_reads(const std::vector<FioReadExtent>& reads, uint32_t depth,
                                  std::string* note, const FioCompareOptions& options) {
  TEMPOKV_ASSIGN_OR_RETURN(FioDepthRun run, run_same_reads(reads, depth, options));
  if (note) *note = run.command;
  return run.gbps;
}

Result<FioCeiling> run_fio_ceiling(const std::vector<FioReadExtent>& reads, uint32_t depth,
                                   const FioCompareOptions& options) {
  if (reads.empty()) return Status::invalid_argument("fio: no reads to compare with");
  std::vector<FioDepthRun> runs;
  TEMPOKV_ASSIGN_OR_RETURN(FioDepthRun first, run_same_reads(reads, depth, options));
  const bool replayed = first.command.find("--read_iolog") != std::string::npos;
  runs.push_back(std::move(first));
  if (!replayed) {  // a replay runs at depth 1 only
    for (uint32_t d : {8u, 16u, 32u}) {
      if (d == depth) continue;
      TEMPOKV_ASSIGN_OR_RETURN(FioDepthRun run, run_same_reads(reads, d, options));
      runs.push_back(std::move(run));
    }
  }
  return fio_ceiling_of(std::move(runs));
}

nlohmann::json fio_runs_json(const std::vector<FioDepthRun>& runs) {
  nlohmann::json out = nlohmann::json::array();
  for (const FioDepthRun& r : runs) {
    out.push_back({{"depth", r.depth},
                   {"gbps", r.gbps},
                   {"read_bytes", r.read_bytes},
                   {"depth_share", r.depth_share}});
  }
  return out;
}

FioCeiling fio_ceiling_of(std::vector<FioDepthRun> runs) {
  FioCeiling c;
  const FioDepthRun& first = runs.front();
  c.equal_depth_gbps = c.best_gbps = first.gbps;
  c.best_depth = first.depth;
  c.command = first.command;
  for (const FioDepthRun& r : runs) {
    c.rates += fmt::format("{}depth {}: {:.2f} GB/s", c.rates.empty() ? "" : ", ", r.depth, r.gbps);
    if (r.gbps > c.best_gbps) {
      c.best_gbps = r.gbps;
      c.best_depth = r.depth;
    }
  }
  c.runs = std::move(runs);
  return c;
}

void FioPairs::add(double rate, const FioCeiling& c) {
  rates.push_back(rate);
  best.push_back(c.best_gbps);
  equal_depth.push_back(c.equal_depth_gbps);
  best_depths.push_back(c.best_depth);
}

double FioPairs::ratio_vs_best() const {
  std::vector<double> r;
  for (size_t i = 0; i < rates.size(); ++i) r.push_back(rates[i] / best[i]);
  return median(r);
}

double FioPairs::ratio_vs_equal_depth() const {
  std::vector<double> r;
  for (size_t i = 0; i < rates.size(); ++i) r.push_back(rates[i] / equal_depth[i]);
  return median(r);
}

double FioPairs::best_gbps() const { return median(best); }
double FioPairs::equal_depth_gbps() const { return median(equal_depth); }

uint32_t FioPairs::best_depth() const {
  std::map<uint32_t, int> count;
  for (uint32_t d : best_depths) ++count[d];
  uint32_t depth = 0;
  int most = 0;
  for (const auto& [d, n] : count) {
    if (n > most) {
      most = n;
      depth = d;
    }
  }
  return depth;
}

}  // namespace tempokv::cli
