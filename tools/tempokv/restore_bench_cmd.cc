// placeholder: replaced by restore-bench
#include "tempokv/commands.h"
namespace tempokv::cli {
void add_restore_bench_command(CLI::App&, int*) {}
}  // namespace tempokv::cli
