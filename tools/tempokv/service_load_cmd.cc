// tempokv service-load: the load test of a running tempokvd (service_load.h).
#include <fstream>
#include <iostream>
#include <memory>

#include "commands.h"
#include "service_chaos.h"
#include "service_hostile.h"
#include "service_load.h"

namespace tempokv::cli {

void add_service_load_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<LoadOptions>();
  auto seconds = std::make_shared<double>(30);
  CLI::App* cmd = app.add_subcommand(
      "service-load", "Load-test a running tempokvd: N clients, a random mix of every call");
  auto chaos = std::make_shared<ChaosOptions>();
  auto chaos_on = std::make_shared<bool>(false);
  auto json = std::make_shared<std::string>();
  auto hostile = std::make_shared<HostileOptions>();
  auto hostile_on = std::make_shared<bool>(false);
  cmd->add_option("--endpoint", o->endpoint,
                  "The daemon's endpoint (ipc://... or tcp://...); not with --chaos or --hostile");
  cmd->add_flag("--chaos", *chaos_on,
                "Start tempokvd itself, SIGKILL clients mid-put and mid-transfer and the daemon "
                "once, then check every acknowledged put and the accounting");
  cmd->add_flag("--hostile", *hostile_on,
                "Start tempokvd itself under a low open-files limit and run every attack of a "
                "hostile peer at once beside well-behaved clients, whose calls must all succeed");
  cmd->add_option("--tempokvd", chaos->tempokvd, "--chaos, --hostile: the tempokvd binary");
  cmd->add_option("--data-dir", chaos->data_dir,
                  "--chaos, --hostile: the daemon's data directory");
  cmd->add_option("--json", *json, "--chaos, --hostile: write the report as JSON to FILE");
  cmd->add_option("--clients", o->clients,
                  "Clients, one thread and session each (--hostile: the well-behaved ones; "
                  "default 4 there)");
  cmd->add_option("--seconds", *seconds, "How long the mix runs")->capture_default_str();
  cmd->add_option("--objects", o->objects, "KV objects put first and claimed by the mix")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Random seed")->capture_default_str();
  cmd->callback([o, seconds, exit_code, chaos, chaos_on, json, hostile, hostile_on, cmd] {
    o->duration = std::chrono::milliseconds(static_cast<int64_t>(*seconds * 1000));
    if (*hostile_on) {
      hostile->tempokvd = chaos->tempokvd;
      hostile->data_dir = chaos->data_dir;
      if (cmd->count("--clients")) hostile->good_clients = o->clients;
      hostile->duration = o->duration;
      hostile->seed = o->seed;
      Result<HostileReport> r = run_service_hostile(*hostile);
      if (!r.is_ok()) {
        std::cerr << "service-load --hostile: " << r.status().to_string() << "\n";
        *exit_code = 1;
        return;
      }
      std::cout << format_hostile_report(*r);
      if (!json->empty()) std::ofstream(*json) << hostile_report_json(*r);
      *exit_code = r->problems.empty() ? 0 : 1;
      return;
    }
    if (*chaos_on) {
      chaos->clients = o->clients;
      chaos->duration = o->duration;
      chaos->seed = o->seed;
      Result<ChaosReport> r = run_service_chaos(*chaos);
      if (!r.is_ok()) {
        std::cerr << "service-load --chaos: " << r.status().to_string() << "\n";
        *exit_code = 1;
        return;
      }
      std::cout << format_chaos_report(*r);
      if (!json->empty()) std::ofstream(*json) << chaos_report_json(*r);
      *exit_code = r->problems.empty() ? 0 : 1;
      return;
    }
    if (o->endpoint.empty()) {
      std::cerr << "service-load: --endpoint is required (or --chaos)\n";
      *exit_code = 1;
      return;
    }
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
