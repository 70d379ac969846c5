// `tempokv restore-bench`: the command line of the restore benchmark (restore_bench.h).
#include <fstream>
#include <iostream>

#include "common/units.h"
#include "restore_bench.h"
#include "restore_report.h"
#include "tempokv/commands.h"

namespace tempokv::cli {

void add_restore_bench_command(CLI::App& app, int* exit_code) {
  auto config = std::make_shared<RestoreBenchConfig>();
  auto session_bytes = std::make_shared<std::string>();
  auto max_request = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "restore-bench",
      "Restore evicted sessions from SSD into device memory by each path (seed 000, Table 1)");
  cmd->add_option("--dir", config->dir, "Store directory, on the drive to measure")
      ->capture_default_str();
  cmd->add_option("--sessions", config->sessions, "Unique sessions, each restored once per path")
      ->capture_default_str();
  cmd->add_option("--model", config->model,
                  "KV geometry: llama-3.1-8b, llama-3.1-70b, qwen2.5-14b, qwen3-coder-30b-a3b, "
                  "qwen3-coder-30b-a3b-fp8kv")
      ->capture_default_str();
  cmd->add_option("--tokens", config->tokens, "Tokens per session")->capture_default_str();
  cmd->add_option("--session-bytes", *session_bytes,
                  "Session size instead of --tokens (e.g. 2GiB); rounded down to whole tokens");
  cmd->add_option("--chunk-tokens", config->chunk_tokens, "Tokens per stored chunk object")
      ->capture_default_str();
  cmd->add_option("--gds-chunk-tokens", config->gds_chunk_tokens,
                  "Tokens per chunk for the gds path (the seed used 1024)")
      ->capture_default_str();
  cmd->add_option("--paths", config->paths, "Paths to run: posix,odirect-bounce,direct,gds")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--depth", config->depth,
                  "direct and gds: read requests in flight. Default: the path's own (direct 16, "
                  "gds 4)");
  cmd->add_option("--baseline-depth", config->baseline_depth,
                  "posix and odirect-bounce: chunks in flight (1 = a naive backend's loop)")
      ->capture_default_str();
  cmd->add_flag("--equal-depth", config->equal_depth,
                "Also run posix and odirect-bounce at --depth (rows posix@N, odirect-bounce@N), "
                "beside their --baseline-depth rows");
  cmd->add_option("--max-request", *max_request,
                  "Largest single read request. Default: the path's own (direct 4 MiB, the "
                  "others a whole chunk up to 64 MiB, gds reads of up to 16 MiB)");
  auto tail_piece = std::make_shared<std::string>();
  cmd->add_option("--tail-piece", *tail_piece,
                  "Smallest read of the taper at a session's end (its last reads shrink to a "
                  "quarter of what is left, so the last device copy is short); 0: no taper. "
                  "Default: the path's own (direct 512 KiB, the others none)");
  cmd->add_option("--transfer", config->transfer, "Transfer engine: auto, emulated, cuda")
      ->capture_default_str();
  cmd->add_option("--cuda-device", config->cuda_device, "CUDA device ordinal")
      ->capture_default_str();
  cmd->add_option("--warmup", config->warmup, "Unmeasured restores per path before measuring")
      ->capture_default_str();
  cmd->add_flag("--compare-fio", config->compare_fio,
                "Also run fio (O_DIRECT, io_uring, same request size, depth and files)");
  cmd->add_flag("--keep", config->keep, "Keep the store directory afterwards");
  cmd->add_flag("--reuse", config->reuse,
                "Reuse sessions already in --dir: the store is opened read-only (nothing written "
                "or reclaimed), and a missing chunk is an error");
  cmd->add_option("--json", config->json_path, "Write the rows as JSON to this file");

  cmd->callback([config, session_bytes, max_request, tail_piece, exit_code] {
    // A size flag given as text ("512MiB"): its bytes, or exit 2 naming the flag.
    auto size = [&](const std::string& text, const char* flag, bool positive,
                    auto&& set) -> bool {
      if (text.empty()) return true;
      Result<uint64_t> b = parse_bytes(text);
      if (!b.is_ok() || (positive && *b == 0)) {
        std::cerr << "restore-bench: " << flag << ": "
                  << (b.is_ok() ? "must be positive" : b.status().to_string()) << "\n";
        *exit_code = 2;
        return false;
      }
      set(*b);
      return true;
    };
    if (!size(*session_bytes, "--session-bytes", false,
              [&](uint64_t b) { config->session_bytes = b; }) ||
        !size(*max_request, "--max-request", true,
              [&](uint64_t b) { config->max_request_bytes = b; }) ||
        !size(*tail_piece, "--tail-piece", false,
              [&](uint64_t b) { config->tail_piece_bytes = b; })) {
      return;
    }
    Result<RestoreBenchResult> r = run_restore_bench(*config);
    if (!r.is_ok()) {
      std::cerr << "restore-bench: " << r.status().to_string() << "\n";
      *exit_code = 1;
      return;
    }
    std::cout << format_restore_table(*r);
    if (!config->json_path.empty()) {
      std::ofstream out(config->json_path);
      out << restore_result_json(*config, *r).dump(2) << "\n";
      if (!out) {
        std::cerr << "restore-bench: cannot write " << config->json_path << "\n";
        *exit_code = 1;
        return;
      }
    }
    bool all_verified = true;
    for (const RestoreBenchRow& row : r->rows) {
      if (row.available && !row.verified) all_verified = false;
    }
    *exit_code = all_verified ? 0 : 3;
  });
}

}  // namespace tempokv::cli
