// `tempokv store bench`: write N objects of deterministic contents, drop them from the page cache,
// read them back at a queue depth into registered aligned buffers, verify every one (checksum on
// the engine's I/O thread, plus a per-block tag naming the object and block), and optionally run
// fio over exactly the same extents (an iolog replay) to compare rates.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/aligned_buffer.h"
#include "common/percentile.h"
#include "common/resource_usage.h"
#include "common/splitmix.h"
#include "progress.h"
#include "store_session.h"
#include "fio_ceiling.h"

namespace tempokv::cli {
namespace {

struct BenchConfig {
  StoreCliOptions store;
  uint64_t objects = 64;  // 64 x 32 MiB = 2 GiB
  std::string object_bytes = "32MiB";
  uint32_t queue_depth = 8;
  std::string json;
  bool compare_fio = false;
  bool rewrite = false;
  bool small_pages = false;
  bool no_verify = false;  // diagnostic: what the payload checksum costs against fio
  uint32_t rounds = 1;  // 4 KiB pages for the read buffers, as fio's malloc gives it
};

const uint64_t kBenchModel = model_id("tempokv-store-bench");
Key bench_key(uint64_t i) { return Key{kBenchModel, i}; }

// Each 4 KiB block starts with (object, block) and continues with bytes derived from both.
void fill_object(uint64_t i, std::byte* p, size_t bytes) {
  for (size_t off = 0, b = 0; off < bytes; off += kBlockBytes, ++b) {
    size_t n = std::min<size_t>(kBlockBytes, bytes - off);
    uint64_t words[kBlockBytes / 8];
    words[0] = i;
    words[1] = b;
    uint64_t s = (i << 32) ^ b ^ 0x5bd1e995;
    for (size_t w = 2; w < kBlockBytes / 8; ++w) words[w] = splitmix64(s);
    std::memcpy(p + off, words, n);
  }
}
bool check_tags(uint64_t i, const std::byte* p, size_t bytes) {
  for (size_t off = 0, b = 0; off + 16 <= bytes; off += kBlockBytes, ++b) {
    uint64_t tag[2];
    std::memcpy(tag, p + off, 16);
    if (tag[0] != i || tag[1] != b) return false;
  }
  return true;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Keeps `depth` operations in flight over `count` items; start(i, slot, done) issues one.
void pipeline(StoreSession& s, size_t count, uint32_t depth, ProgressBar& bar,
              const std::function<void(size_t, size_t, std::function<void()>)>& start) {
  size_t next = 0, finished = 0;
  std::vector<size_t> free_slots;
  for (size_t k = 0; k < depth; ++k) free_slots.push_back(k);
  std::function<void()> fill = [&] {
    while (next < count && !free_slots.empty()) {
      size_t slot = free_slots.back();
      free_slots.pop_back();
      size_t i = next++;
      start(i, slot, [&, slot] {
        free_slots.push_back(slot);
        bar.update(++finished);
        fill();
      });
    }
  };
  fill();
  s.run_until([&] { return finished == count; });
}

// fio's ceiling over the payload extents the store read (fio_ceiling.h): per segment, one job
// reading the objects there in log order with `rw=read:4096` (skip each 4 KiB record header), bs =
// the read size, buffers registered as the store's are. Objects of one size written back to back
// are evenly spaced, which this relies on; any other layout is refused (no replay) rather than
// measure different bytes.
Result<FioCeiling> fio_ceiling_same_extents(Store& store, const std::vector<ObjectInfo>& infos,
                                            uint32_t depth, bool small_pages) {
  std::vector<FioReadExtent> reads;
  for (const ObjectInfo& o : infos) reads.push_back({store.segment_path(o.segment), o.offset, o.read_bytes()});
  FioCompareOptions o;
  o.allow_replay = false;
  o.huge_pages = !small_pages;
  return run_fio_ceiling(reads, depth, o);
}

int run_bench(const BenchConfig& cfg) {
  auto fail = [](const Status& st) {
    std::fprintf(stderr, "tempokv store bench: %s\n", st.to_string().c_str());
    return 1;
  };
  Result<uint64_t> size = parse_bytes(cfg.object_bytes);
  if (!size.is_ok()) return fail(size.status());
  if (*size == 0 || cfg.objects == 0 || cfg.queue_depth == 0 || cfg.rounds == 0) {
    return fail(Status::invalid_argument(
        "--objects, --object-bytes, --queue-depth and --rounds must be > 0"));
  }
  const uint64_t bytes = *size;
  // Every object stays in the store through the reads: refuse a capacity that would reclaim some
  // while they are written (a record is its payload in whole blocks and a header block; a segment
  // also keeps a header and room for its seal).
  Result<StoreOptions> resolved = cfg.store.store_options(bytes);
  if (!resolved.is_ok()) return fail(resolved.status());
  const std::string capacity = std::to_string(resolved->capacity_bytes);
  {
    const uint64_t need = cfg.objects * (round_up(bytes, kBlockBytes) + kBlockBytes);
    if (need > resolved->capacity_bytes) {
      return fail(Status::invalid_argument(
          "--capacity " + capacity + " cannot hold --objects " +
          std::to_string(cfg.objects) + " of --object-bytes " + std::to_string(bytes) + " (" +
          std::to_string(need) + " bytes with their headers): raise --capacity or lower --objects"));
    }
  }
  StoreSession s;
  if (Status st = s.open(cfg.store, cfg.queue_depth, bytes); !st.is_ok()) return fail(st);
  const uint64_t read_bytes = round_up(bytes, kBlockBytes);
  std::vector<AlignedBuffer> bufs;
  for (uint32_t k = 0; k < cfg.queue_depth; ++k) {
    auto b = AlignedBuffer::allocate(read_bytes, !cfg.small_pages);
    if (!b.is_ok()) return fail(b.status());
    bufs.push_back(std::move(b).value());
    (void)s.engine().register_buffer(bufs.back().data(), bufs.back().size());
  }

  // 1. Write what is missing (a rerun reuses the objects of an earlier one).
  std::vector<uint64_t> todo;
  for (uint64_t i = 0; i < cfg.objects; ++i) {
    auto info = s.store().lookup(bench_key(i));
    if (cfg.rewrite || !info || info->payload_bytes != bytes) todo.push_back(i);
  }
  Status write_error;
  auto tw = std::chrono::steady_clock::now();
  {
    ProgressBar bar("writing", todo.size());
    pipeline(s, todo.size(), cfg.queue_depth, bar, [&](size_t n, size_t slot, auto done) {
      uint64_t i = todo[n];
      fill_object(i, bufs[slot].data(), bytes);
      s.store().put(bench_key(i), {uint32_t(i * 256), uint32_t(i * 256 + 256)}, bufs[slot].data(),
                    bytes, [&, done](Status st) {
                      if (!st.is_ok() && write_error.is_ok()) write_error = st;
                      done();
                    });
    });
  }
  double write_s = since(tw);
  if (!write_error.is_ok()) return fail(write_error);

  // 2. The extents to read (dropped from the page cache before every round).
  std::vector<ObjectInfo> infos;
  std::set<uint32_t> segments;
  for (uint64_t i = 0; i < cfg.objects; ++i) {
    std::optional<ObjectInfo> info = s.store().lookup(bench_key(i));
    if (!info) {  // reclaimed while the others were written: --capacity too small after all
      return fail(Status::failed_precondition(
          "object " + std::to_string(i) + " was reclaimed while the bench wrote the others: " +
          "--capacity " + capacity + " is too small for --objects " +
          std::to_string(cfg.objects)));
    }
    infos.push_back(*info);
    segments.insert(info->segment);
  }

  // 3 and 4, `rounds` times: read back at the queue depth and verify; beside it (before it in
  // every other round, so that drift of a shared disk hits both alike) fio's ceiling over the same
  // extents, order and size, at the same depth and at 8, 16 and 32. Ratios are taken per round.
  std::set<size_t> bad_objects;  // failed verification in any round
  std::string first_error, fio_note;
  std::vector<FioDepthRun> fio_first_runs;
  const double total = double(bytes) * double(cfg.objects);
  std::vector<double> store_rates, cpu_rates;
  FioPairs pairs;
  for (uint32_t round = 0; round < cfg.rounds; ++round) {
    Result<FioCeiling> ceiling = Status::unavailable("fio not asked for");
    if (cfg.compare_fio && round % 2 == 1) ceiling = fio_ceiling_same_extents(s.store(), infos, cfg.queue_depth, cfg.small_pages);
    for (uint32_t seg : segments) (void)drop_page_cache(s.store().segment_path(seg));
    double cpu0 = process_cpu_seconds();
    auto tr = std::chrono::steady_clock::now();
    {
      ProgressBar bar("reading", cfg.objects);
      pipeline(s, cfg.objects, cfg.queue_depth, bar, [&](size_t i, size_t slot, auto done) {
        s.store().get(bench_key(i), bufs[slot].data(), bufs[slot].size(),
                      [&, i, slot, done](Result<size_t> r) {
                        bool ok =
                            r.is_ok() && *r == bytes && check_tags(i, bufs[slot].data(), bytes);
                        if (!ok) bad_objects.insert(i);
                        if (!ok && first_error.empty()) {
                          first_error = r.is_ok() ? "object " + std::to_string(i) +
                                                        ": wrong contents"
                                                  : r.status().to_string();
                        }
                        done();
                      });
      });
    }
    double read_s = since(tr);
    cpu_rates.push_back((process_cpu_seconds() - cpu0) / (total / 1e9));
    store_rates.push_back(total / read_s / 1e9);
    if (!cfg.compare_fio) continue;
    if (round % 2 == 0) ceiling = fio_ceiling_same_extents(s.store(), infos, cfg.queue_depth, cfg.small_pages);
    if (!ceiling.is_ok()) return fail(ceiling.status());
    pairs.add(store_rates.back(), *ceiling);
    if (fio_first_runs.empty()) fio_first_runs = ceiling->runs;
    fio_note += (fio_note.empty() ? ceiling->command + "; round 1: " : "; round " +
                 std::to_string(round + 1) + ": ") + ceiling->rates;
  }
  for (auto& b : bufs) s.engine().unregister_buffer(b.data());
  const double read_gbps = median(store_rates);
  const double fio_gbps = pairs.equal_depth_gbps();
  const double fio_best_gbps = pairs.best_gbps();
  const uint32_t fio_best_depth = pairs.best_depth();
  const double ratio = pairs.empty() ? 0 : pairs.ratio_vs_equal_depth();
  const double ratio_vs_best = pairs.empty() ? 0 : pairs.ratio_vs_best();
  const double cpu_per_gb = median(cpu_rates);
  const uint64_t verified = cfg.objects - bad_objects.size();
  const uint64_t failed = bad_objects.size();

  std::printf("store bench: %llu objects x %s, queue depth %u, engine %s (%s, %u hook threads), "
              "%s buffers\n",
              static_cast<unsigned long long>(cfg.objects), format_bytes(bytes).c_str(),
              cfg.queue_depth, cfg.store.engine.c_str(), std::string(s.engine().name()).c_str(),
              cfg.store.hook_threads,
              bufs.front().huge_pages() ? "hugetlb" : (cfg.small_pages ? "4 KiB-page" : "THP"));
  if (!todo.empty()) {
    std::printf("  wrote %zu objects in %.2f s (%.2f GB/s, durable)\n", todo.size(), write_s,
                double(todo.size()) * double(bytes) / write_s / 1e9);
  }
  if (cfg.rounds > 1) std::printf("  medians of %u alternating rounds\n", cfg.rounds);
  std::printf("  %-10s %10s %16s %10s\n", "path", "GB/s", "cpu core-s/GB", "verified");
  std::printf("  %-10s %10.3f %16.4f %6llu/%llu%s\n", "store", read_gbps, cpu_per_gb,
              static_cast<unsigned long long>(verified), static_cast<unsigned long long>(cfg.objects),
              cfg.no_verify ? "  (--no-verify: payload checksums NOT checked, tags only)" : "");
  if (cfg.compare_fio) {
    std::printf("  %-10s %10.3f  (same depth)\n", "fio", fio_gbps);
    std::printf("  %-10s %10.3f  (best of depths %u, 8, 16, 32: depth %u)\n", "fio best",
                fio_best_gbps, cfg.queue_depth, fio_best_depth);
    std::printf("  %-10s %10.3f  (store / fio best; %.3f at the same depth)\n", "ratio",
                ratio_vs_best, ratio);
    std::printf("  fio: %s\n", fio_note.c_str());
  }
  if (failed > 0) std::printf("  FAILED: %llu objects, first: %s\n",
                              static_cast<unsigned long long>(failed), first_error.c_str());
  if (!cfg.json.empty()) {
    nlohmann::json j = {{"read_gbps", read_gbps},       {"fio_gbps", fio_gbps},
                        {"ratio", ratio},               {"cpu_core_s_per_gb", cpu_per_gb},
                        {"objects", cfg.objects},       {"verified", verified},
                        {"object_bytes", bytes},        {"queue_depth", cfg.queue_depth},
                        {"engine", std::string(s.engine().name())},
                        {"fio_command", fio_note}, {"small_pages", cfg.small_pages},
                        {"rounds", cfg.rounds},     {"read_gbps_rounds", store_rates},
                        {"fio_gbps_rounds", pairs.equal_depth},
                        {"fio_best_gbps_rounds", pairs.best},
                        {"fio_best_gbps", fio_best_gbps},
                        {"fio_best_depth", fio_best_depth},
                        {"fio_first_runs", fio_runs_json(fio_first_runs)},
                        {"ratio_vs_best", ratio_vs_best},
                        {"checksums_verified", !cfg.no_verify},
                        {"hook_threads", cfg.store.hook_threads}};
    std::ofstream out(cfg.json);
    out << j.dump(2) << "\n";
    if (!out) return fail(Status::io_error("cannot write --json " + cfg.json));
  }
  return failed > 0 ? 1 : 0;
}

}  // namespace

void add_store_bench_command(CLI::App* store, int* exit_code) {
  auto cfg = std::make_shared<BenchConfig>();
  CLI::App* cmd = store->add_subcommand(
      "bench", "Write objects, read them back cold at a queue depth, verify, compare with fio");
  cfg->store.add_to(cmd, true);
  cmd->add_option("--objects", cfg->objects, "Objects to write and read")->capture_default_str();
  cmd->add_option("--object-bytes", cfg->object_bytes,
                  "Object size (32MiB = a 256-token chunk of Llama-3.1-8B)")
      ->capture_default_str();
  cmd->add_option("--queue-depth", cfg->queue_depth, "Gets (and puts) in flight")
      ->capture_default_str();
  cmd->add_option("--json", cfg->json, "Write the results as JSON to this file");
  cmd->add_flag("--compare-fio", cfg->compare_fio,
                "Also read the same extents with fio (O_DIRECT, io_uring, same depth and size)");
  cmd->add_flag("--rewrite", cfg->rewrite, "Write every object even when already stored");
  cmd->add_option("--rounds", cfg->rounds,
                  "Read (and fio) rounds, alternating; the medians are reported")
      ->capture_default_str();
  cmd->add_flag("--small-pages", cfg->small_pages,
                "Read into 4 KiB pages instead of (transparent) huge pages, as fio does");
  cmd->add_flag("--no-verify", cfg->no_verify,
                "Diagnostic: read without checking payload checksums (tempokvd always checks), "
                "to show what the checksum costs against fio");
  cmd->add_option("--hook-threads", cfg->store.hook_threads,
                  "Threads that verify completed reads (0: the engine's completion thread, "
                  "which also reaps and resubmits reads: the old behaviour)")
      ->capture_default_str();
  cmd->callback([cfg, exit_code] {
    cfg->store.verify_reads = !cfg->no_verify;
    *exit_code = run_bench(*cfg);
  });
}

}  // namespace tempokv::cli
