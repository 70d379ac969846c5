#include "eval/eval_service.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "common/units.h"
#include "executor/real_executor.h"
#include "ssd/ssd_engine.h"
#include "workload/tokens.h"

namespace tempokv {
namespace {

constexpr size_t kLookupBatch = 512;  // keys per lookup call: a message well under the limit

std::string number_text(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

// The last lines of the daemon's log, for an error message (its own words on why it failed).
std::string log_tail(const std::string& path, size_t lines = 4) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(std::move(line));
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
    out += "\n  " + all[i];
  }
  return out.empty() ? "" : "; its log ends:" + out;
}

Status write_profile(const CostProfile& p, const std::string& path) {
  const nlohmann::json j = {
      {"name", p.name},
      {"model", p.model},
      {"kv_bytes_per_token", p.kv_bytes_per_token},
      {"prefill",
       {{"a_s", p.prefill_a_s},
        {"b_s_per_token", p.prefill_b_s_per_token},
        {"c_s_per_token2", p.prefill_c_s_per_token2}}},
      {"decode",
       {{"a_s", p.decode_a_s},
        {"b_s_per_context_token", p.decode_b_s_per_context_token},
        {"c_s_per_seq", p.decode_c_s_per_seq}}},
      {"retrieval",
       {{"latency_s", p.retrieval_latency_s}, {"bytes_per_s", p.retrieval_bytes_per_s}}}};
  std::ofstream out(path, std::ios::trunc);
  out << j.dump(1) << "\n";
  out.close();
  if (!out) return Status::io_error("cannot write " + path);
  return Status::ok();
}

}  // namespace

Result<ControlCounters> service_counters(const service::StatList& stats) {
  auto get = [&](std::string_view name) -> Result<double> {
    for (const auto& [n, v] : stats) {
      if (n == name) return v;
    }
    return Status::invalid_argument("tempokvd's stats have no " + std::string(name));
  };
  auto count = [&](std::string_view name) -> Result<uint64_t> {
    TEMPOKV_ASSIGN_OR_RETURN(double v, get(name));
    return static_cast<uint64_t>(std::llround(v));
  };
  ControlCounters c;
  TEMPOKV_ASSIGN_OR_RETURN(c.protected_gib_s, get("protected_gib_seconds_total"));
  TEMPOKV_ASSIGN_OR_RETURN(c.claims, count("claims_reported_total"));
  TEMPOKV_ASSIGN_OR_RETURN(c.commits, count("commits_total"));
  TEMPOKV_ASSIGN_OR_RETURN(c.refused_claims, count("claims_refused_total"));
  TEMPOKV_ASSIGN_OR_RETURN(c.refused_attempts, count("commits_refused_total"));
  TEMPOKV_ASSIGN_OR_RETURN(c.tier_bytes, count("tier_capacity_bytes"));
  TEMPOKV_ASSIGN_OR_RETURN(c.budget_bytes, count("tier_budget_bytes"));
  TEMPOKV_ASSIGN_OR_RETURN(uint64_t protected_bytes, count("tier_protected_bytes"));
  TEMPOKV_ASSIGN_OR_RETURN(uint64_t reserved_bytes, count("tier_reserved_bytes"));
  TEMPOKV_ASSIGN_OR_RETURN(uint64_t in_flight, count("reads_in_flight"));
  TEMPOKV_ASSIGN_OR_RETURN(uint64_t queued, count("reads_queued"));
  c.held_bytes = protected_bytes + reserved_bytes;
  c.reads = in_flight + queued;
  return c;
}

Result<std::vector<std::string>> daemon_args(const StorageConfig& storage, const StackConfig& stack,
                                             const std::string& profile_path) {
  if (stack.baseline()) {
    return Status::invalid_argument(
        "policy lmcache-dax runs baseline engines without claims; it has no service mode");
  }
  if (stack.write_produced_kv) {
    return Status::invalid_argument("produced-KV writes need the in-process stack");
  }
  const auto tick_ms = std::chrono::duration_cast<std::chrono::milliseconds>(stack.tick);
  if (tick_ms < std::chrono::milliseconds(1) || tick_ms != stack.tick) {
    return Status::invalid_argument("StackConfig.tick must be whole milliseconds for tempokvd");
  }
  if (stack.static_read_bytes_per_s != stack.prior_read_bytes_per_s) {
    return Status::invalid_argument(
        "tempokvd's fixed TTR rate (tempokv-no-state-ttr) is its TTR prior: "
        "StackConfig.static_read_bytes_per_s must equal prior_read_bytes_per_s");
  }
  // As EvalStorage::open and EvalStack::create size the in-process store and tier.
  const uint64_t chunk = storage.chunk_bytes;
  const uint64_t slot = round_up(chunk, kBlockBytes);
  auto set = [](const std::string& field, const std::string& value) {
    return std::vector<std::string>{"--set", field + "=" + value};
  };
  std::vector<std::string> args = {"--policy", stack.policy};
  for (auto&& kv :
       {set("tier.slot_bytes", std::to_string(slot)),
        set("tier.capacity_bytes", std::to_string(stack.fast_tier_bytes / slot * slot)),
        set("tier.budget_bytes", std::to_string(stack.budget_bytes / slot * slot)),
        // Puts are one at a time: a few objects' room is plenty.
        set("writes.region_bytes", std::to_string(16 * slot)),
        set("store.segment_bytes", std::to_string(64 * chunk)),
        set("store.capacity_bytes", std::to_string(storage.capacity_bytes)),
        set("store.max_object_bytes", std::to_string(4 * chunk)),
        // EvalStorage's SSD engine: io_uring with the default submission queue.
        set("store.engine", "uring"),
        set("store.queue_depth", std::to_string(SsdEngineOptions{}.queue_depth)),
        set("controller.tick_ms", std::to_string(tick_ms.count())),
        set("controller.max_reads_in_flight", std::to_string(stack.max_reads_in_flight)),
        set("controller.prior_read_bytes_per_s", number_text(stack.prior_read_bytes_per_s)),
        set("controller.profile", profile_path),
        set("controller.max_active", std::to_string(stack.max_active)),
        set("controller.prior_output_tokens", std::to_string(stack.prior_output_tokens))}) {
    args.insert(args.end(), kv.begin(), kv.end());
  }
  return args;
}

EvalService::~EvalService() { (void)stop(); }

Status EvalService::start(const StorageConfig& storage, const StackConfig& stack,
                          RealExecutor& executor) {
  TEMPOKV_RETURN_IF_ERROR(stop());
  std::error_code ec;
  std::filesystem::create_directories(data_dir_, ec);
  if (ec) return Status::io_error("cannot create " + data_dir_ + ": " + ec.message());
  // The profile itself, not its name: the daemon projects with exactly the engines' costs.
  const std::string profile_path = data_dir_ + "/profile.json";
  TEMPOKV_RETURN_IF_ERROR(write_profile(stack.profile, profile_path));
  service::SpawnOptions so;
  so.binary = binary_;
  so.data_dir = data_dir_;
  TEMPOKV_ASSIGN_OR_RETURN(so.extra_args, daemon_args(storage, stack, profile_path));
  so.extra_args.insert(so.extra_args.end(), extra_args_.begin(), extra_args_.end());
  so.log_path = data_dir_ + "/tempokvd.log";
  // The socket appears once the daemon has populated its tier (3.1 GiB in real mode's scaled
  // testbed): seconds on a quiet machine, more than the default 20 s on a loaded two-core one.
  so.ready_timeout = std::chrono::seconds(90);
  auto daemon = service::SpawnedDaemon::start(so);
  if (!daemon.is_ok()) {
    return Status(daemon.status().code(), daemon.status().message() + log_tail(so.log_path));
  }
  daemon_ = std::move(daemon).value();

  ClientOptions co;
  co.endpoint = daemon_->endpoint();
  co.name = "eval-control";
  // The hello waits for the daemon's store scan; puts for the SSD.
  co.call_timeout = std::chrono::seconds(60);
  // Precompute's lookups must be answered, not fail fast as a serving engine's do.
  co.lookup_timeout = co.call_timeout;
  TEMPOKV_ASSIGN_OR_RETURN(control_, ServiceClient::connect(co));
  return control_->attach(executor);
}

Status EvalService::precompute(const std::vector<Request>& requests) {
  if (!control_) return Status::failed_precondition("EvalService::precompute: no daemon runs");
  std::vector<CachedChunk> chunks;
  std::unordered_set<Key> seen;
  for (const Request& r : requests) {
    for (uint32_t i = 0; i < r.precomputed_chunks && i < r.chunks.size(); ++i) {
      if (seen.insert(r.chunks[i].key).second) chunks.push_back(r.chunks[i]);
    }
  }
  std::vector<std::byte> bytes;
  for (size_t first = 0; first < chunks.size(); first += kLookupBatch) {
    const size_t n = std::min(kLookupBatch, chunks.size() - first);
    std::vector<Key> keys;
    for (size_t i = first; i < first + n; ++i) keys.push_back(chunks[i].key);
    TEMPOKV_ASSIGN_OR_RETURN(std::vector<uint64_t> sizes, control_->lookup(keys));
    for (size_t i = 0; i < n; ++i) {
      if (sizes[i] != 0) continue;
      const CachedChunk& c = chunks[first + i];
      bytes.resize(c.bytes);
      fill_chunk_bytes(c.key, bytes);
      Status st = control_->put(c.key, c.tokens, bytes);
      if (!st.is_ok()) return Status(st.code(), "precompute through tempokvd: " + st.message());
    }
  }
  return Status::ok();
}

Result<ControlCounters> EvalService::counters() {
  TEMPOKV_ASSIGN_OR_RETURN(service::StatList s, stats());
  return service_counters(s);
}

Result<service::StatList> EvalService::stats() {
  if (!control_) return Status::failed_precondition("EvalService: no daemon runs");
  return control_->stats();
}

Status EvalService::stop() {
  if (control_) {
    (void)control_->bye();  // a daemon that is gone is found out by its exit status below
    control_.reset();
  }
  if (!daemon_) return Status::ok();
  Result<int> code = daemon_->stop();
  daemon_.reset();
  const std::string log = data_dir_ + "/tempokvd.log";
  if (!code.is_ok()) return Status(code.status().code(), code.status().message() + log_tail(log));
  if (*code != 0) {
    return Status::internal("tempokvd exited with status " + std::to_string(*code) +
                            " after SIGTERM" + log_tail(log));
  }
  return Status::ok();
}

}  // namespace tempokv
