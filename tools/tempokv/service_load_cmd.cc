// tempokv service-load: the load test of a running tempokvd (service_load.h).
#include <iostream>
#include <memory>

#include "commands.h"
#include "service_load.h"

namespace tempokv::cli {

void add_service_load_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<LoadOptions>();
  auto seconds = std::make_shared<double>(30);
  CLI::App* cmd = app.add_subcommand(
      "service-load", "Load-test a running tempokvd: N clients, a random mix of every call");
  cmd->add_option("--endpoint", o->endpoint, "The daemon's endpoint (ipc://... or tcp://...)")
      ->required();
  cmd->add_option("--clients", o->clients, "Clients, one thread and session each")
      ->capture_default_str();
  cmd->add_option("--seconds", *seconds, "How long the mix runs")->capture_default_str();
  cmd->add_option("--objects", o->objects, "KV objects put first and claimed by the mix")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Random seed")->capture_default_str();
  cmd->callback([o, seconds, exit_code] {
    o->duration = std::chrono::milliseconds(static_cast<int64_t>(*seconds * 1000));
    Result<LoadReport> r = run_service_load(*o);
    if (!r.is_ok()) {
      std::cerr << "service-load: " << r.status().to_string() << "\n";
      *exit_code = 1;
      return;
    }
    std::cout << format_load_report(*r);
    *exit_code = r->problems.empty() ? 0 : 1;
  });
}

}  // namespace tempokv::cli
