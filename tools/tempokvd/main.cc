// tempokvd: the staging control plane as a service (docs/protocol.md, docs/tempokvd-config.md).
//
//   tempokvd [--config FILE] [--set table.key=value]... [--endpoint E] [--data-dir D]
//            [--metrics HOST:PORT] [--policy P] [--print-config]
//
// Flags override the file; without --config the defaults serve ./tempokvd-data on an ipc socket
// there. SIGTERM or SIGINT shuts down cleanly: sessions end (claims cancelled), reads and puts in
// flight finish, the store is closed; a restart finds the store's KV again.
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "daemon/daemon.h"

namespace {

std::string profiles_dir(const char* argv0) {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("TEMPOKV_PROFILES")) return env;
  std::error_code ec;
  std::vector<fs::path> starts = {fs::read_symlink("/proc/self/exe", ec).parent_path(),
                                  fs::absolute(argv0, ec).parent_path()};
#ifdef TEMPOKV_SOURCE_DIR
  starts.insert(starts.begin(), fs::path(TEMPOKV_SOURCE_DIR));
#endif
  for (const fs::path& s : starts) {
    for (fs::path p = s; !p.empty(); p = p.parent_path()) {
      if (fs::exists(p / "profiles" / "cpu-small.json", ec)) return (p / "profiles").string();
      if (p == p.parent_path()) break;
    }
  }
  return "profiles";
}

int fail(const tempokv::Status& st) {
  std::cerr << "tempokvd: " << st.to_string() << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tempokv;
  using namespace tempokv::service;
  CLI::App app{"tempokvd: SSD-backed KV-cache staging service"};
  std::string config_path, endpoint, data_dir, metrics, policy;
  std::vector<std::string> sets;
  bool print_config = false;
  app.add_option("--config", config_path, "TOML configuration file (docs/tempokvd-config.md)")
      ->check(CLI::ExistingFile);
  app.add_option("--set", sets, "Override one field: table.key=value (repeatable)");
  app.add_option("--endpoint", endpoint, "server.endpoint: ipc://PATH or tcp://127.0.0.1:PORT");
  app.add_option("--data-dir", data_dir, "data_dir: socket, store");
  app.add_option("--metrics", metrics, "server.metrics_address: HOST:PORT, \"\" for none");
  app.add_option("--policy", policy, "controller.policy");
  app.add_flag("--print-config", print_config, "Print the effective configuration and exit");
  CLI11_PARSE(app, argc, argv);

  DaemonConfig config;
  if (!config_path.empty()) {
    Result<DaemonConfig> loaded = load_daemon_config(config_path);
    if (!loaded.is_ok()) return fail(loaded.status());
    config = *loaded;
  }
  for (const std::string& s : sets) {
    Status st = apply_override(config, s);
    if (!st.is_ok()) return fail(st);
  }
  if (app.count("--endpoint")) config.server.endpoint = endpoint;
  if (app.count("--data-dir")) config.data_dir = data_dir;
  if (app.count("--metrics")) config.server.metrics_address = metrics;
  if (app.count("--policy")) config.controller.policy = policy;
  if (Status st = config.validate(); !st.is_ok()) return fail(st);
  if (print_config) {
    std::cout << config.to_toml();
    return 0;
  }

  // Signals arrive as a descriptor on the loop, never asynchronously.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  const int sig_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sig_fd < 0) return fail(Status::from_errno(errno, "signalfd"));

  // Whatever the daemon creates is its own unless it says otherwise (the socket, the shared files
  // and the data directory get explicit modes too; this covers the store and anything else).
  umask(077);
  RealExecutor executor;
  Result<std::unique_ptr<Daemon>> daemon = Daemon::start(executor, config, profiles_dir(argv[0]));
  if (!daemon.is_ok()) return fail(daemon.status());
  Daemon& d = **daemon;
  for (const std::string& notice : d.notices()) std::cerr << "tempokvd: " << notice << "\n";
  const StoreStats ss = d.core().store().stats();
  // One write: a reader that waits for "serving on" (a test, a supervisor) sees the whole line.
  std::ostringstream line;
  line << "tempokvd: serving on " << d.endpoint() << "; store " << config.resolved_store_dir()
       << " (" << ss.objects << " objects, " << ss.live_bytes << " bytes)";
  if (d.metrics_port() != 0) line << "; metrics on port " << d.metrics_port();
  line << "; policy " << config.controller.policy << " (reads issued by "
       << (d.core().provider().issue_order() == IssueOrder::kCommit ? "commit" : "use") << ")\n";
  std::cerr << line.str() << std::flush;

  Status exit_status;
  bool stopping = false;
  Status st = executor.watch(sig_fd, EPOLLIN, [&](uint32_t) {
    signalfd_siginfo info{};
    while (read(sig_fd, &info, sizeof(info)) == sizeof(info)) {
      if (stopping) continue;
      stopping = true;
      std::cerr << "tempokvd: signal " << info.ssi_signo << ", shutting down" << std::endl;
      d.shutdown([&](Status done) {
        exit_status = done;
        executor.stop();
      });
    }
  });
  if (!st.is_ok()) return fail(st);
  executor.run();
  (void)executor.unwatch(sig_fd);
  close(sig_fd);
  daemon->reset();
  if (!exit_status.is_ok()) return fail(exit_status);
  std::cerr << "tempokvd: stopped cleanly" << std::endl;
  return 0;
}
