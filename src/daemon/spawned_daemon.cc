#include "daemon/spawned_daemon.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "daemon/shared_file.h"

extern char** environ;

namespace tempokv::service {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPoll = std::chrono::milliseconds(10);

std::string ms(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Owns a posix_spawn_file_actions_t for the length of one spawn.
class FileActions {
 public:
  FileActions() { posix_spawn_file_actions_init(&actions_); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

// True when something accepts TCP connections at tcp://A.B.C.D:PORT.
bool tcp_accepts(const std::string& endpoint) {
  const std::string rest = endpoint.substr(std::string("tcp://").size());
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::atoi(rest.c_str() + colon + 1)));
  if (inet_pton(AF_INET, rest.substr(0, colon).c_str(), &addr.sin_addr) != 1) return false;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool ok = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace

Status SpawnOptions::validate() const {
  if (binary.empty()) return Status::invalid_argument("SpawnOptions.binary is empty");
  if (data_dir.empty()) return Status::invalid_argument("SpawnOptions.data_dir is empty");
  if (ready_timeout <= Duration::zero()) {
    return Status::invalid_argument("SpawnOptions.ready_timeout must be positive");
  }
  return Status::ok();
}

Result<std::unique_ptr<SpawnedDaemon>> SpawnedDaemon::start(const SpawnOptions& options) {
  namespace fs = std::filesystem;
  TEMPOKV_RETURN_IF_ERROR(options.validate());
  std::error_code ec;
  if (!fs::exists(options.binary, ec)) {
    return Status::not_found("tempokvd binary " + options.binary + " does not exist");
  }
  const std::string socket = options.data_dir + "/tempokvd.sock";
  const bool tcp = !options.tcp_endpoint.empty();
  // A socket left by a daemon that was killed would look like readiness.
  if (!tcp) fs::remove(socket, ec);

  const std::string endpoint = tcp ? options.tcp_endpoint : "ipc://" + socket;
  std::vector<std::string> args;
  if (options.max_open_files != 0 || options.umask >= 0) {
    // posix_spawn cannot set limits; a shell sets them and execs the daemon with its arguments.
    std::string script;
    if (options.max_open_files != 0) {
      script += "ulimit -n " + std::to_string(options.max_open_files) + " || exit 127; ";
    }
    if (options.umask >= 0) {
      char mask[8];
      std::snprintf(mask, sizeof(mask), "%03o", static_cast<unsigned>(options.umask & 0777));
      script += std::string("umask ") + mask + "; ";
    }
    args = {"/bin/sh", "-c", script + "exec \"$0\" \"$@\""};
  }
  for (const std::string& a : {options.binary, std::string("--data-dir"), options.data_dir,
                               std::string("--endpoint"), endpoint, std::string("--metrics"),
                               options.metrics_address}) {
    args.push_back(a);
  }
  args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  FileActions actions;
  if (!options.log_path.empty()) {
    posix_spawn_file_actions_addopen(actions.get(), STDERR_FILENO, options.log_path.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
  }
  pid_t pid = -1;
  if (int err = posix_spawn(&pid, argv[0], actions.get(), nullptr, argv.data(), environ)) {
    return Status::from_errno(err, "posix_spawn " + options.binary);
  }
  std::unique_ptr<SpawnedDaemon> d(new SpawnedDaemon(pid, endpoint));
  d->data_dir_ = options.data_dir;
  const std::string log_hint =
      options.log_path.empty() ? std::string() : " (its log: " + options.log_path + ")";
  const Clock::time_point deadline = Clock::now() + options.ready_timeout;
  while (Clock::now() < deadline) {
    if (tcp ? tcp_accepts(endpoint) : fs::exists(socket, ec)) return d;
    Result<int> exited = d->try_reap();
    if (exited.is_ok()) {
      return Status::failed_precondition("tempokvd exited with status " + std::to_string(*exited) +
                                         " before serving" + log_hint);
    }
    std::this_thread::sleep_for(kPoll);
  }
  return Status::unavailable("tempokvd did not serve " + endpoint + " within " +
                             ms(options.ready_timeout) + log_hint);
}

SpawnedDaemon::~SpawnedDaemon() {
  if (pid_ > 0) kill_and_clean();
}

void SpawnedDaemon::kill_and_clean() {
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  clean();
}

void SpawnedDaemon::clean() {
  // A daemon killed (or crashed) cannot remove its shared files (GiBs of /dev/shm for a large
  // tier): they are removed as the next daemon on the data directory would, unless one already
  // runs there.
  const std::string lock = data_dir_ + "/tempokvd.lock";
  const int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
    (void)remove_recorded_shared_files(data_dir_, SharedFilePlace{});
  }
  ::close(fd);
}

Result<int> SpawnedDaemon::try_reap() {
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) {
    return Status::failed_precondition("tempokvd (pid " + std::to_string(pid_) +
                                       ") is still running");
  }
  pid_ = -1;
  // Died by a signal (SIGABRT, SIGSEGV, a SIGKILL from elsewhere): its files are left behind.
  if (WIFSIGNALED(status)) clean();
  return exit_code(status);
}

Result<int> SpawnedDaemon::stop(Duration timeout) {
  if (pid_ <= 0) return Status::failed_precondition("tempokvd is already stopped");
  const pid_t pid = pid_;
  kill(pid_, SIGTERM);
  const Clock::time_point deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    Result<int> exited = try_reap();
    if (exited.is_ok()) return exited;
    std::this_thread::sleep_for(kPoll);
  }
  kill_and_clean();
  return Status::unavailable("tempokvd (pid " + std::to_string(pid) + ") did not exit within " +
                             ms(timeout) + " of SIGTERM; killed");
}

}  // namespace tempokv::service
