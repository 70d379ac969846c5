// `tempokv store put|get|ls|verify|stats|bench`: the persistent store from the command line.
// get, ls, verify and stats inspect: they open the store read-only and never write or reclaim.
// Errors print the Status and exit 1; nothing here throws past CLI11's own parsing.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>

#include "common/aligned_buffer.h"
#include "store_session.h"
#include "tempokv/commands.h"

namespace tempokv::cli {

void add_store_bench_command(CLI::App* store, int* exit_code);  // store_bench_cmd.cc

namespace {

int fail(const Status& st) {
  std::fprintf(stderr, "tempokv store: %s\n", st.to_string().c_str());
  return 1;
}

struct KeyArgs {
  std::string key_hex;
  std::string model;
  uint32_t tokens_begin = 0;
  uint32_t tokens_end = 0;

  void add_to(CLI::App* cmd, bool with_model) {
    cmd->add_option("--key", key_hex, "Key as 32 hex digits (model id, then prefix hash)");
    if (!with_model) return;
    cmd->add_option("--model", model, "Model name: derive the key from it and the token range");
    cmd->add_option("--tokens-begin", tokens_begin, "First token of the chunk");
    cmd->add_option("--tokens-end", tokens_end, "One past the last token of the chunk");
  }
  Result<Key> key() const {
    if (!key_hex.empty()) {
      auto k = Key::parse(key_hex);
      if (!k) return Status::invalid_argument("--key '" + key_hex + "' is not 32 hex digits");
      return *k;
    }
    if (model.empty()) return Status::invalid_argument("give --key, or --model with a token range");
    // Without the token ids, the range stands in for them in the chained hash.
    uint32_t range[2] = {tokens_begin, tokens_end};
    return Key{model_id(model), chain_hash(model_id(model), range)};
  }
};

Result<std::string> read_input(const std::string& path) {
  if (path.empty() || path == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found("cannot open --file " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int run_put(const StoreCliOptions& o, const KeyArgs& k, const std::string& file) {
  Result<Key> key = k.key();
  if (!key.is_ok()) return fail(key.status());
  if (k.tokens_end < k.tokens_begin) {
    return fail(Status::invalid_argument("--tokens-end is before --tokens-begin"));
  }
  Result<std::string> data = read_input(file);
  if (!data.is_ok()) return fail(data.status());
  StoreSession s;
  if (Status st = s.open(o); !st.is_ok()) return fail(st);
  Status st = s.put(*key, {k.tokens_begin, k.tokens_end}, data->data(), data->size());
  if (!st.is_ok()) return fail(st);
  std::printf("stored %s: %zu bytes, tokens [%u, %u)\n", key->to_string().c_str(), data->size(),
              k.tokens_begin, k.tokens_end);
  return 0;
}

int run_get(const StoreCliOptions& o, const KeyArgs& k, const std::string& out_path) {
  Result<Key> key = k.key();
  if (!key.is_ok()) return fail(key.status());
  StoreSession s;
  if (Status st = s.open(o); !st.is_ok()) return fail(st);
  auto info = s.store().lookup(*key);
  if (!info) return fail(Status::not_found("key " + key->to_string() + " is not in the store"));
  auto buf = AlignedBuffer::allocate(info->read_bytes());
  if (!buf.is_ok()) return fail(buf.status());
  Result<size_t> n = s.get(*key, buf->data(), buf->size());
  if (!n.is_ok()) return fail(n.status());
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(buf->data()), static_cast<std::streamsize>(*n));
  if (!out) return fail(Status::io_error("cannot write --out " + out_path));
  std::printf("wrote %zu bytes of %s to %s\n", *n, key->to_string().c_str(), out_path.c_str());
  return 0;
}

int run_ls(const StoreCliOptions& o) {
  StoreSession s;
  if (Status st = s.open(o); !st.is_ok()) return fail(st);
  std::printf("%-32s  %-17s  %12s  %8s\n", "key", "tokens", "bytes", "segment");
  for (const ObjectInfo& i : s.store().list()) {
    std::string tokens = "[" + std::to_string(i.tokens.begin) + ", " +
                         std::to_string(i.tokens.end) + ")";
    std::printf("%-32s  %-17s  %12llu  %8u\n", i.key.to_string().c_str(), tokens.c_str(),
                static_cast<unsigned long long>(i.payload_bytes), i.segment);
  }
  return 0;
}

int run_verify(const StoreCliOptions& o) {
  Result<VerifyReport> r = verify_store_dir(o.dir);
  if (!r.is_ok()) return fail(r.status());
  for (const auto& p : r->problems) std::printf("  %s\n", p.c_str());
  // Already set aside (never read, counted against capacity until reclaimed): listed, not failed.
  for (const auto& q : r->quarantined) {
    std::printf("  quarantined %s  %llu bytes (corrupt segment header)\n", q.name.c_str(),
                static_cast<unsigned long long>(q.bytes));
  }
  std::printf(
      "segments %llu  good %llu  corrupt %llu  torn %llu  tombstones %llu  dropped %llu  "
      "quarantined %zu  checked %s\n",
      static_cast<unsigned long long>(r->segments), static_cast<unsigned long long>(r->good),
      static_cast<unsigned long long>(r->corrupt), static_cast<unsigned long long>(r->torn),
      static_cast<unsigned long long>(r->tombstones), static_cast<unsigned long long>(r->dropped),
      r->quarantined.size(), format_bytes(r->bytes_checked).c_str());
  return r->corrupt > 0 ? 1 : 0;
}

int run_stats(const StoreCliOptions& o) {
  StoreSession s;
  if (Status st = s.open(o); !st.is_ok()) return fail(st);
  StoreStats t = s.store().stats();
  auto line = [](const char* name, uint64_t v) {
    std::printf("%-20s %llu\n", name, static_cast<unsigned long long>(v));
  };
  line("objects", t.objects);
  line("live_bytes", t.live_bytes);
  line("segments", t.segments);
  line("disk_bytes", t.disk_bytes);
  line("capacity_bytes", t.capacity_bytes);
  line("corrupt_records", t.corrupt_records);
  line("torn_records", t.torn_records);
  line("checksum_failures", t.checksum_failures);
  line("dropped_records", t.dropped_records);
  line("quarantined_segments", t.quarantined_segments);
  line("quarantined_bytes", t.quarantined_bytes);
  line("reclaimed_segments", t.reclaimed_segments);
  line("recorded_capacity", s.store().recorded_capacity());
  return 0;
}

}  // namespace

void add_store_commands(CLI::App& app, int* exit_code) {
  CLI::App* store = app.add_subcommand("store", "The persistent SSD object store");
  store->require_subcommand(1);

  auto opts = std::make_shared<StoreCliOptions>();
  auto key = std::make_shared<KeyArgs>();
  auto path = std::make_shared<std::string>();

  CLI::App* put = store->add_subcommand("put", "Store a file (or stdin) under a key");
  opts->add_to(put, true);
  key->add_to(put, true);
  put->add_option("--file", *path, "Payload file ('-' or absent: stdin)");
  put->callback([=] { *exit_code = run_put(*opts, *key, *path); });

  CLI::App* get = store->add_subcommand("get", "Write an object's payload to a file");
  opts->add_to(get, false);
  key->add_to(get, true);
  get->add_option("--out", *path, "Output file")->required();
  get->callback([=] { *exit_code = run_get(opts->inspecting(), *key, *path); });

  CLI::App* ls = store->add_subcommand("ls", "One line per object: key, tokens, bytes, segment");
  opts->add_to(ls, false);
  ls->callback([=] { *exit_code = run_ls(opts->inspecting()); });

  CLI::App* verify = store->add_subcommand(
      "verify", "Check every record and payload; exit 1 when any is corrupt (torn is expected "
                "after a crash)");
  opts->add_to(verify, false);
  verify->callback([=] { *exit_code = run_verify(*opts); });

  CLI::App* stats =
      store->add_subcommand("stats", "Open the store read-only and print its counters");
  opts->add_to(stats, false);
  stats->callback([=] { *exit_code = run_stats(opts->inspecting()); });

  add_store_bench_command(store, exit_code);
}

}  // namespace tempokv::cli
