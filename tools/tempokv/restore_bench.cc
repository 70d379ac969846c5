#include "restore_bench.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "common/model_geometry.h"
#include "common/percentile.h"
#include "common/resource_usage.h"
#include "common/units.h"
#include "executor/real_executor.h"
#include "fio_ceiling.h"
#include "progress.h"
#include "restore_measure.h"
#include "restore_sessions.h"
#include "ssd/ssd_engine.h"
#include "store/store.h"
#include "transfer/restore_path.h"
#include "transfer/transfer_engine.h"

namespace tempokv::cli {
namespace {

bool is_baseline(const std::string& path) { return path == "posix" || path == "odirect-bounce"; }

// The SSD engine each path reads through (none for gds, which reads with cuFile).
Result<std::unique_ptr<SsdEngine>> engine_for(const std::string& path, RealExecutor& executor,
                                              uint32_t depth) {
  SsdEngineOptions o;
  if (path == "posix") {
    o.kind = SsdEngineKind::kThreadPool;
    o.direct = false;
    o.threads = std::max<uint32_t>(1, depth);
  } else if (path == "odirect-bounce") {
    o.kind = SsdEngineKind::kThreadPool;
    o.direct = true;
    o.threads = std::max<uint32_t>(1, depth);
  } else {
    o.kind = SsdEngineKind::kUring;
    o.direct = true;
    o.queue_depth = std::max<uint32_t>(64, depth * 4);
  }
  return make_ssd_engine(executor, o);
}

std::unique_ptr<RestorePath> make_path(const std::string& name, RealExecutor& executor,
                                       SsdEngine* ssd, TransferEngine& transfer,
                                       const RestorePathOptions& o) {
  if (name == "posix") return make_posix_restore_path(executor, *ssd, transfer, o);
  if (name == "odirect-bounce") return make_odirect_bounce_restore_path(executor, *ssd, transfer, o);
  if (name == "direct") return make_direct_restore_path(executor, *ssd, transfer, o);
  return make_gds_restore_path(executor, transfer, o);
}

struct PathRun {
  RestoreBenchRow row;
  std::unique_ptr<SsdEngine> ssd;
  std::unique_ptr<RestorePath> path;
  RestorePathOptions options;
};

double disk_gbps(const RestoreSample& s) { return double(s.disk_read_bytes) / (s.ms / 1e3) / 1e9; }
// The rate set against fio's (which reads exactly the path's requests): the path's own read
// bytes where it counts them, else the device's.
double read_gbps(const RestoreSample& s) {
  const uint64_t bytes = s.path_read_bytes ? s.path_read_bytes : s.disk_read_bytes;
  return double(bytes) / (s.ms / 1e3) / 1e9;
}

// The bytes a path reads for a session in requests of at most request_bytes (what fio is to
// read beside it). Without the direct path's taper at the session's end: a taper would make
// fio's last records jobs of their own, each ending in a drain, and lower the ceiling.
std::vector<FioReadExtent> session_reads(Store& store, const BenchSession& s,
                                         uint64_t request_bytes) {
  std::vector<FioReadExtent> reads;
  for (const Key& k : s.keys) {
    std::optional<ObjectInfo> o = store.lookup(k);
    if (!o) continue;
    std::string file = store.segment_path(o->segment);
    for (uint64_t off = 0; off < o->read_bytes(); off += request_bytes) {
      reads.push_back({file, o->offset + off, std::min(request_bytes, o->read_bytes() - off)});
    }
  }
  return reads;
}

void summarize(RestoreBenchRow& row, const std::vector<RestoreSample>& samples) {
  std::vector<double> ms, disk, delivery, cpu, cpu_host, depth, read_ms, copy_ms, tail_ms, path_ms;
  uint64_t payload = 0, host_copy = 0, emulated_copy = 0;
  row.verified = !samples.empty();
  for (const RestoreSample& s : samples) {
    if (!s.status.is_ok()) {
      row.verified = false;
      if (row.error.empty()) row.error = s.status.to_string();
      continue;
    }
    row.verified = row.verified && s.verified;
    double sec = s.ms / 1e3;
    ms.push_back(s.ms);
    disk.push_back(disk_gbps(s));
    delivery.push_back(double(s.payload_bytes) / sec / 1e9);
    cpu.push_back(s.cpu_s);
    cpu_host.push_back(s.cpu_s - s.emulated_dma_cpu_s);
    depth.push_back(s.mean_read_depth);
    read_ms.push_back(s.read_ms_mean);
    copy_ms.push_back(s.copy_ms_mean);
    tail_ms.push_back(s.tail_ms);
    path_ms.push_back(s.path_ms);
    payload += s.payload_bytes;
    host_copy += s.host_copy_bytes;
    emulated_copy += s.emulated_copy_bytes;
  }
  row.restores = uint32_t(ms.size());
  row.restore_ms_median = nearest_rank_percentile(ms, 0.5);
  row.restore_ms_p95 = nearest_rank_percentile(ms, 0.95);
  row.disk_read_gbps = nearest_rank_percentile(disk, 0.5);
  row.delivery_gbps = nearest_rank_percentile(delivery, 0.5);
  row.cpu_core_s_per_req = nearest_rank_percentile(cpu, 0.5);
  row.cpu_core_s_per_req_excl_emulated_dma = nearest_rank_percentile(cpu_host, 0.5);
  row.mean_read_depth = nearest_rank_percentile(depth, 0.5);
  row.read_ms_mean = nearest_rank_percentile(read_ms, 0.5);
  row.copy_ms_mean = nearest_rank_percentile(copy_ms, 0.5);
  row.tail_ms = nearest_rank_percentile(tail_ms, 0.5);
  row.path_ms_median = nearest_rank_percentile(path_ms, 0.5);
  if (payload > 0) {
    row.cpu_copy_bytes_per_byte = double(host_copy) / double(payload);
    row.emulated_device_copy_bytes_per_byte = double(emulated_copy) / double(payload);
  }
}

Status check_free_space(const std::string& dir, uint64_t needed) {
  struct statvfs vfs {};
  if (statvfs(dir.c_str(), &vfs) != 0) return Status::ok();  // unknown: let the store find out
  uint64_t avail = uint64_t(vfs.f_bavail) * vfs.f_frsize;
  if (needed > avail) {
    return Status::resource_exhausted("the sessions need " + format_bytes(needed) + " in " + dir +
                                      " but only " + format_bytes(avail) +
                                      " is free; use fewer --sessions or --tokens");
  }
  return Status::ok();
}

}  // namespace

Status RestoreBenchConfig::validate() const {
  if (sessions == 0) return Status::invalid_argument("--sessions must be at least 1");
  if (chunk_tokens == 0 || gds_chunk_tokens == 0) {
    return Status::invalid_argument("--chunk-tokens must be at least 1");
  }
  if (tokens == 0 && session_bytes == 0) {
    return Status::invalid_argument("--tokens or --session-bytes must be positive");
  }
  if (baseline_depth == 0) return Status::invalid_argument("--baseline-depth must be >= 1");
  if (!is_aligned(max_request_bytes, kBlockBytes)) {
    return Status::invalid_argument("--max-request must be a multiple of 4 KiB");
  }
  if (!is_aligned(tail_piece_bytes.value_or(0), kBlockBytes)) {
    return Status::invalid_argument("--tail-piece must be a multiple of 4 KiB");
  }
  if (paths.empty()) return Status::invalid_argument("--paths is empty");
  const auto& known = restore_path_names();
  for (const std::string& p : paths) {
    if (std::find(known.begin(), known.end(), p) == known.end()) {
      return Status::invalid_argument("unknown path '" + p +
                                      "' (posix, odirect-bounce, direct, gds)");
    }
  }
  return Status::ok();
}

Result<RestoreBenchResult> run_restore_bench(const RestoreBenchConfig& config) {
  TEMPOKV_RETURN_IF_ERROR(config.validate());
  TEMPOKV_ASSIGN_OR_RETURN(ModelGeometry model, find_model_geometry(config.model));
  RestoreBenchResult result;
  result.bytes_per_token = model.bytes_per_token();
  result.tokens = config.session_bytes ? config.session_bytes / result.bytes_per_token
                                       : config.tokens;
  if (result.tokens == 0) {
    return Status::invalid_argument("--session-bytes is smaller than one token of " +
                                    std::string(model.name));
  }

  namespace fs = std::filesystem;
  std::error_code ec;
  bool created_dir = !fs::exists(config.dir, ec);
  if (created_dir && config.reuse) {  // --reuse reads an earlier run's store: it creates nothing
    return Status::not_found("--reuse: " + config.dir +
                             " does not exist; run without --reuse first to write the sessions");
  }
  fs::create_directories(config.dir, ec);
  if (ec) return Status::io_error("cannot create " + config.dir + ": " + ec.message());

  RealExecutor executor;
  TransferEngineOptions topt;
  TEMPOKV_ASSIGN_OR_RETURN(topt.kind, parse_transfer_engine_kind(config.transfer));
  topt.cuda_device = config.cuda_device;
  TEMPOKV_ASSIGN_OR_RETURN(auto transfer, make_transfer_engine(executor, topt));

  // Paths first: only the available ones need their chunking written.
  // Each path at its depth; with --equal-depth the baselines once more at --depth, so that every
  // path is also compared at the same number of requests in flight.
  // --depth, or the direct path's own depth (what --equal-depth runs the baselines at).
  const uint32_t depth_asked =
      config.depth ? config.depth
                   : default_restore_options("direct", uint64_t(config.chunk_tokens) *
                                                           result.bytes_per_token).depth;
  auto own_depth = [&](const std::string& name, uint64_t chunk_bytes) {
    if (is_baseline(name)) return config.baseline_depth;
    return config.depth ? config.depth : default_restore_options(name, chunk_bytes).depth;
  };
  std::vector<std::pair<std::string, uint32_t>> configurations;
  for (const std::string& name : config.paths) configurations.emplace_back(name, 0);
  for (const std::string& name : config.paths) {
    if (config.equal_depth && is_baseline(name) && config.baseline_depth != depth_asked) {
      configurations.emplace_back(name, depth_asked);
    }
  }
  std::vector<PathRun> runs;
  for (const auto& [name, depth] : configurations) {
    PathRun run;
    run.row.path = depth == 0 ? name : name + "@" + std::to_string(depth);
    run.row.device = transfer->device_description();
    run.row.chunk_tokens = name == "gds" ? config.gds_chunk_tokens : config.chunk_tokens;
    uint64_t chunk_bytes = round_up(run.row.chunk_tokens * result.bytes_per_token, kBlockBytes);
    run.row.depth = depth == 0 ? own_depth(name, chunk_bytes) : depth;
    run.options.slot_bytes = config.max_request_bytes
                                 ? std::min(chunk_bytes, config.max_request_bytes)
                                 : default_restore_options(name, chunk_bytes).slot_bytes;
    run.options.depth = run.row.depth;
    run.options.tail_min_bytes =
        std::min(run.options.slot_bytes,
                 config.tail_piece_bytes.value_or(
                     default_restore_options(name, chunk_bytes).tail_min_bytes));
    run.row.request_bytes = name == "gds" ? std::min<uint64_t>(run.options.slot_bytes, 16ULL << 20)
                                          : run.options.slot_bytes;
    Status st;
    if (name != "gds") {
      auto ssd = engine_for(name, executor, run.row.depth);
      if (ssd.is_ok()) run.ssd = std::move(ssd).value();
      else st = ssd.status();
    }
    if (st.is_ok()) {
      run.path = make_path(name, executor, run.ssd.get(), *transfer, run.options);
      st = run.path->prepare();
    }
    if (st.is_ok()) {
      run.row.available = true;
      run.row.detail = run.path->detail();
    } else {
      // "unavailable: <reason>": an Unavailable status is its message, anything else says what
      // went wrong.
      run.row.unavailable_reason =
          st.code() == StatusCode::kUnavailable ? st.message() : st.to_string();
      run.path.reset();
    }
    runs.push_back(std::move(run));
  }

  // The store and the sessions, one set per chunking in use.
  std::map<uint32_t, SessionSpec> specs;
  uint64_t max_chunk_bytes = 0, needed = 0;
  for (const PathRun& r : runs) {
    if (!r.row.available || specs.count(r.row.chunk_tokens)) continue;
    SessionSpec spec{config.model, result.bytes_per_token, result.tokens, r.row.chunk_tokens,
                     config.sessions};
    spec.write_missing = !config.reuse;
    specs[r.row.chunk_tokens] = spec;
    max_chunk_bytes = std::max(max_chunk_bytes, uint64_t(spec.chunk_tokens) * spec.bytes_per_token);
    needed += session_store_bytes(spec);
  }
  if (!config.reuse) TEMPOKV_RETURN_IF_ERROR(check_free_space(config.dir, needed));
  SsdEngineOptions store_engine_options;  // io_uring, O_DIRECT
  TEMPOKV_ASSIGN_OR_RETURN(auto store_engine, make_ssd_engine(executor, store_engine_options));
  StoreOptions sopt;
  sopt.dir = config.dir;
  sopt.segment_bytes = std::max<uint64_t>(1ULL << 30, round_up(max_chunk_bytes, kMiB) + kMiB);
  sopt.max_object_bytes = std::max<uint64_t>(round_up(max_chunk_bytes, kBlockBytes), kBlockBytes);
  sopt.capacity_bytes = std::max<uint64_t>(needed * 2 + 4 * sopt.segment_bytes, 64ULL << 30);
  // A store already in --dir (an earlier run's, or a stopped daemon's) keeps the sizes it was
  // made with: the bench never grows it past them nor reclaims what it holds to make room.
  TEMPOKV_ASSIGN_OR_RETURN(const RecordedSizes recorded, recorded_store_sizes(config.dir));
  if (recorded.capacity_bytes != 0) {
    sopt.segment_bytes = recorded.segment_bytes;
    sopt.capacity_bytes = recorded.capacity_bytes;
  }
  sopt.read_only = config.reuse;  // inspection of an earlier run's store: never reclaims
  TEMPOKV_ASSIGN_OR_RETURN(auto store, Store::open(executor, *store_engine, sopt));
  if (!config.reuse) {
    const StoreStats t = store->stats();
    const uint64_t used = t.disk_bytes + t.spare_bytes;
    if (used + needed > sopt.capacity_bytes) {
      return Status::failed_precondition(
          config.dir + " holds a store of capacity " + std::to_string(sopt.capacity_bytes) +
          " bytes with " + std::to_string(used) + " in use; the sessions need up to " +
          std::to_string(needed) + " more, and writing them could reclaim what it holds: use " +
          "another --dir, fewer --sessions, or --reuse");
    }
  }

  std::map<uint32_t, std::vector<BenchSession>> sessions;
  {
    ProgressBar bar("writing sessions", needed);
    uint64_t base = 0;
    for (auto& [chunk_tokens, spec] : specs) {
      TEMPOKV_ASSIGN_OR_RETURN(
          sessions[chunk_tokens],
          write_sessions(executor, *store, spec, [&](uint64_t b) { bar.update(base + b); }));
      base += session_store_bytes(spec);
    }
  }

  Result<std::string> dev = block_device_of(config.dir);
  if (dev.is_ok()) result.block_device = *dev;

  RestoreRig rig{executor, *store, *transfer, result.block_device};
  std::string fio_error, fio_direct_note, fio_other_note;
  for (PathRun& run : runs) {
    if (!run.row.available) continue;
    const auto& list = sessions[run.row.chunk_tokens];
    run.row.session_bytes = list.front().payload_bytes;
    uint64_t device_bytes = 0;
    {
      Result<RestoreSession> probe = RestoreSession::resolve(*store, list.front().keys);
      if (!probe.is_ok()) return probe.status();
      device_bytes = probe->device_bytes();
    }
    reset_peak_rss();
    auto dst = transfer->allocate(device_bytes);
    Status st = dst.status();
    if (st.is_ok() && (*dst)->kind() == DeviceKind::kEmulated) {
      // Touch it once: device memory is allocated up front, not faulted in during a restore.
      std::memset((*dst)->data(), 0, (*dst)->size());
    }
    if (st.is_ok()) st = run.path->register_destination(**dst);
    if (!st.is_ok()) {
      run.row.available = false;
      run.row.unavailable_reason = st.to_string();
      continue;
    }
    std::vector<RestoreSample> samples;
    ProgressBar bar("restore " + run.row.path, list.size() + config.warmup);
    for (uint32_t w = 0; w < config.warmup; ++w) {
      RestoreSample s = measure_restore(rig, *run.path, list[w % list.size()].keys, **dst);
      if (!s.status.is_ok()) samples.push_back(std::move(s));  // a failure still counts
      bar.update(w + 1);
    }
    // With --compare-fio, fio reads each session's payloads beside its restore, before it for
    // every other session: a shared drive's drift hits both alike, and each pair gives a ratio.
    FioPairs pairs;
    for (size_t i = 0; i < list.size(); ++i) {
      bool compare = config.compare_fio && fio_error.empty();
      std::optional<FioCeiling> ceiling;
      auto fio = [&] {
        Result<FioCeiling> c =
            run_fio_ceiling(session_reads(*store, list[i], run.row.request_bytes), run.row.depth);
        if (c.is_ok()) ceiling = std::move(c).value();
        else fio_error = c.status().to_string();
      };
      if (compare && i % 2 == 1) fio();
      samples.push_back(measure_restore(rig, *run.path, list[i].keys, **dst));
      if (compare && i % 2 == 0) fio();
      bar.update(samples.size() + config.warmup);
      if (ceiling && samples.back().status.is_ok()) {
        pairs.add(read_gbps(samples.back()), *ceiling);
        std::string& note = run.row.path == "direct" ? fio_direct_note : fio_other_note;
        if (note.empty()) note = ceiling->command + "; first pair: " + ceiling->rates;
        if (run.row.fio_first_runs.empty()) run.row.fio_first_runs = ceiling->runs;
      }
    }
    bar.finish();
    run.row.peak_rss_bytes = read_peak_rss_bytes();
    summarize(run.row, samples);
    if (!pairs.empty()) {
      run.row.fio_ratio = pairs.ratio_vs_best();
      run.row.fio_equal_depth_ratio = pairs.ratio_vs_equal_depth();
      run.row.fio_gbps = pairs.best_gbps();
      run.row.fio_equal_depth_gbps = pairs.equal_depth_gbps();
      run.row.fio_best_depth = pairs.best_depth();
      run.row.fio_pairs = uint32_t(pairs.rates.size());
    }
    run.path->unregister_destination(**dst);
    run.path->release();
  }

  // The header's fio figures: the direct path's pairs (or the first path compared).
  const RestoreBenchRow* ref = nullptr;
  for (const PathRun& r : runs) {
    if (r.row.fio_gbps && (!ref || r.row.path == "direct")) ref = &r.row;
  }
  if (ref) {
    result.fio_gbps = ref->fio_gbps;
    result.fio_equal_depth_gbps = ref->fio_equal_depth_gbps;
    result.fio_best_depth = ref->fio_best_depth;
  }
  if (config.compare_fio) result.fio_note = !fio_error.empty()          ? fio_error
                      : !fio_direct_note.empty() ? fio_direct_note
                                                 : fio_other_note;
  for (PathRun& r : runs) result.rows.push_back(std::move(r.row));

  bool closed = false;
  store->close([&](Status) { closed = true; });
  executor.run_until([&] { return closed; });
  store.reset();
  if (created_dir && !config.keep) fs::remove_all(config.dir, ec);
  return result;
}

}  // namespace tempokv::cli
