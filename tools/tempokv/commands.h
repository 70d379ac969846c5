// The subcommands of the tempokv CLI. Each add_* registers its subcommand on the app; the
// subcommand's callback runs the work and sets *exit_code.
#pragma once

#include <CLI/CLI.hpp>

namespace tempokv::cli {

void add_store_commands(CLI::App& app, int* exit_code);
void add_restore_bench_command(CLI::App& app, int* exit_code);
void add_eval_command(CLI::App& app, int* exit_code);
void add_service_load_command(CLI::App& app, int* exit_code);

}  // namespace tempokv::cli
