// tempokv: the command-line tool. Thin over the library; every subcommand lives in its own file.
#include <cstdio>

#include "tempokv/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"TempoKV: prefix KV cache on SSD, staged to the GPU just in time"};
  app.require_subcommand(1);
  int exit_code = 0;
  tempokv::cli::add_store_commands(app, &exit_code);
  tempokv::cli::add_restore_bench_command(app, &exit_code);
  tempokv::cli::add_eval_command(app, &exit_code);
  tempokv::cli::add_service_load_command(app, &exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
