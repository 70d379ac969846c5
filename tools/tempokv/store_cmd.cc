// placeholder: replaced by the store subcommands
#include "tempokv/commands.h"
namespace tempokv::cli {
void add_store_commands(CLI::App&, int*) {}
}  // namespace tempokv::cli
