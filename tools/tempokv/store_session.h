// StoreSession: what the `tempokv store` subcommands share — the common options, and a store
// opened on a RealExecutor with a real SSD engine, with blocking wrappers around its
// asynchronous calls. One per command; not thread-safe.
#pragma once

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "common/units.h"
#include "executor/real_executor.h"
#include "ssd/ssd_engine.h"
#include "store/store.h"

namespace tempokv::cli {

struct StoreCliOptions {
  std::string dir;
  std::string engine = "uring";
  // Empty: the size of the store's newest segment, or kDefaultSegmentBytes for a new store.
  std::string segment_bytes;
  static constexpr const char* kDefaultSegmentBytes = "1GiB";
  // Empty: the capacity recorded in the store's newest segment (a daemon's store keeps the
  // daemon's), or kDefaultCapacity for a new store.
  std::string capacity;
  static constexpr const char* kDefaultCapacity = "64GiB";
  bool reclaim = false;    // --reclaim: a store above --capacity loses its oldest segments
  bool read_only = false;  // inspection: shared lock, no writes, no reclamation
  bool verify_reads = true;  // store bench --no-verify only
  uint32_t hook_threads = SsdEngineOptions{}.hook_threads;  // store bench --hook-threads only

  // Registers --dir and --engine on a subcommand, and for a writer (put, bench) --segment-bytes,
  // --capacity and --reclaim. Inspection commands take no sizes: they never write or reclaim.
  void add_to(CLI::App* cmd, bool writer) {
    cmd->add_option("--dir", dir, "Store directory")->required();
    cmd->add_option("--engine", engine, "SSD engine: uring or threadpool")->capture_default_str();
    if (!writer) return;
    cmd->add_option("--segment-bytes", segment_bytes,
                    "Segment file size (e.g. 1GiB). Default: the store's newest segment's (1GiB "
                    "for a new store)");
    cmd->add_option("--capacity", capacity,
                    "Bound on all segment files (e.g. 64GiB); a store already larger is refused "
                    "unless --reclaim. Default: the capacity the store was made with (64GiB for "
                    "a new store)");
    cmd->add_flag("--reclaim", reclaim,
                  "Delete the oldest segments of a store found above --capacity");
  }
  Result<StoreOptions> store_options(uint64_t max_object_bytes = 1ULL << 30) const {
    StoreOptions o;
    o.dir = dir;
    TEMPOKV_ASSIGN_OR_RETURN(RecordedSizes recorded, recorded_store_sizes(dir));
    TEMPOKV_ASSIGN_OR_RETURN(
        o.segment_bytes,
        segment_bytes.empty() && recorded.segment_bytes != 0
            ? Result<uint64_t>(recorded.segment_bytes)
            : parse_bytes(segment_bytes.empty() ? kDefaultSegmentBytes : segment_bytes));
    TEMPOKV_ASSIGN_OR_RETURN(
        o.capacity_bytes,
        capacity.empty() && recorded.capacity_bytes != 0
            ? Result<uint64_t>(recorded.capacity_bytes)
            : parse_bytes(capacity.empty() ? kDefaultCapacity : capacity));
    // Inspection never writes or reclaims: only the sizes' validity matters there.
    if (read_only) o.capacity_bytes = std::max(o.capacity_bytes, o.segment_bytes);
    if (o.segment_bytes < 4 * kBlockBytes) {
      return Status::invalid_argument("--segment-bytes " + segment_bytes + " is below 16 KiB");
    }
    o.max_object_bytes = std::min<uint64_t>(max_object_bytes, o.segment_bytes - 3 * kBlockBytes);
    o.read_only = read_only;
    o.verify_reads = verify_reads;
    o.reclaim_at_open = reclaim;
    return o;
  }
  // A copy for an inspection command.
  StoreCliOptions inspecting() const {
    StoreCliOptions o = *this;
    o.read_only = true;
    return o;
  }
};

class StoreSession {
 public:
  Status open(const StoreCliOptions& cli, uint32_t queue_depth = 64,
              uint64_t max_object_bytes = 1ULL << 30) {
    TEMPOKV_ASSIGN_OR_RETURN(SsdEngineKind kind, parse_ssd_engine_kind(cli.engine));
    if (kind == SsdEngineKind::kSimulated) {
      return Status::invalid_argument("--engine sim has no bytes to store; use uring or threadpool");
    }
    SsdEngineOptions eo;
    eo.kind = kind;
    eo.queue_depth = std::max<uint32_t>(64, queue_depth * 4);
    eo.threads = std::max<uint32_t>(4, queue_depth);
    eo.hook_threads = cli.hook_threads;
    TEMPOKV_ASSIGN_OR_RETURN(engine_, make_ssd_engine(ex_, eo));
    TEMPOKV_ASSIGN_OR_RETURN(StoreOptions o, cli.store_options(max_object_bytes));
    TEMPOKV_ASSIGN_OR_RETURN(store_, Store::open(ex_, *engine_, o));
    const StoreStats t = store_->stats();
    if (t.reclaimed_at_open_segments > 0) {  // --reclaim deleted data: say what
      std::fprintf(stderr,
                   "reclaimed %llu oldest segment(s) holding %llu object(s) to fit %llu bytes\n",
                   static_cast<unsigned long long>(t.reclaimed_at_open_segments),
                   static_cast<unsigned long long>(t.reclaimed_at_open_objects),
                   static_cast<unsigned long long>(o.capacity_bytes));
    }
    return Status::ok();
  }
  ~StoreSession() {
    if (store_) (void)close();
  }
  Status close() {
    std::optional<Status> r;
    store_->close([&](Status st) { r = st; });
    ex_.run_until([&] { return r.has_value(); });
    store_.reset();
    return *r;
  }
  // Runs the loop until pred() holds.
  void run_until(const std::function<bool()>& pred) { ex_.run_until(pred); }
  Status put(const Key& k, TokenRange t, const void* data, size_t bytes) {
    std::optional<Status> r;
    store_->put(k, t, data, bytes, [&](Status st) { r = st; });
    ex_.run_until([&] { return r.has_value(); });
    return *r;
  }
  Result<size_t> get(const Key& k, void* dst, size_t dst_bytes) {
    std::optional<Result<size_t>> r;
    store_->get(k, dst, dst_bytes, [&](Result<size_t> res) { r = std::move(res); });
    ex_.run_until([&] { return r.has_value(); });
    return std::move(*r);
  }
  Store& store() { return *store_; }
  SsdEngine& engine() { return *engine_; }
  RealExecutor& executor() { return ex_; }

 private:
  RealExecutor ex_;
  std::unique_ptr<SsdEngine> engine_;
  std::unique_ptr<Store> store_;
};

}  // namespace tempokv::cli
