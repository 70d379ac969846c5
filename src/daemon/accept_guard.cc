#include "daemon/accept_guard.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace tempokv::service {
namespace {

using Clock = std::chrono::steady_clock;
// At most one sweep of stale entries per this long while at the limit: a flood of refused
// connections must not cost a pass over the whole list each.
constexpr auto kPurgeEvery = std::chrono::milliseconds(10);

struct Entry {
  uint64_t inode = 0;
  Clock::time_point idle_since{};
};

struct State {
  std::mutex mu;
  bool armed = false;
  std::string ipc_path;  // as bound; "@name" is the abstract name "\0name"
  int tcp_port = -1;
  uint64_t max_connections = 0;
  uint64_t fd_limit = 0;
  int listener = -1;  // the listening descriptor, once an accept on it was seen
  int spare = -1;     // given up to drain one connection when the descriptors run out
  std::unordered_map<int, Entry> table;
  Clock::time_point last_purge{};
};

State& state() {
  static State* s = new State();  // never destroyed: libzmq's thread may accept at exit
  return *s;
}

std::atomic<bool> g_armed{false};
std::atomic<uint64_t> g_refused{0};

int raw_accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
  return static_cast<int>(syscall(SYS_accept4, fd, addr, len, flags));
}

uint64_t inode_of(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return 0;
  return static_cast<uint64_t>(st.st_ino);
}

// Under mu: whether `fd` is the armed endpoint's listening socket.
bool is_listener(State& s, int fd) {
  if (fd == s.listener) return true;
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return false;
  bool match = false;
  if (ss.ss_family == AF_UNIX && !s.ipc_path.empty()) {
    const auto* un = reinterpret_cast<const sockaddr_un*>(&ss);
    const size_t n =
        len > offsetof(sockaddr_un, sun_path) ? len - offsetof(sockaddr_un, sun_path) : 0;
    std::string path(un->sun_path, n);
    if (!path.empty() && path[0] == '\0') {
      path[0] = '@';
      match = path == s.ipc_path;
    } else {
      match = std::string(path.c_str()) == s.ipc_path;
    }
  } else if (ss.ss_family == AF_INET && s.tcp_port >= 0) {
    match = ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port) == s.tcp_port;
  } else if (ss.ss_family == AF_INET6 && s.tcp_port >= 0) {
    match = ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port) == s.tcp_port;
  }
  if (match) s.listener = fd;
  return match;
}

// Under mu: drops the entries whose descriptor is no longer the connection accepted.
void purge(State& s) {
  s.last_purge = Clock::now();
  for (auto it = s.table.begin(); it != s.table.end();) {
    it = inode_of(it->first) == it->second.inode ? std::next(it) : s.table.erase(it);
  }
}

int refuse(int fd) {
  close(fd);
  g_refused.fetch_add(1, std::memory_order_relaxed);
  errno = EAGAIN;  // what libzmq's listeners take for "nothing to accept"
  return -1;
}

int guarded_accept(int fd, sockaddr* addr, socklen_t* len, int flags) {
  if (!g_armed.load(std::memory_order_acquire)) return raw_accept4(fd, addr, len, flags);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.armed || !is_listener(s, fd)) return raw_accept4(fd, addr, len, flags);
  const int c = raw_accept4(fd, addr, len, flags);
  if (c < 0) {
    const int err = errno;
    if (err != EMFILE && err != ENFILE) {
      errno = err;
      return -1;
    }
    // Out of descriptors: the spare makes room to take the waiting connection and refuse it, so
    // the backlog drains and the listener does not spin; then the spare is taken back.
    if (s.spare >= 0) {
      close(s.spare);
      const int drained = raw_accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (drained >= 0) close(drained);
      s.spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    g_refused.fetch_add(1, std::memory_order_relaxed);
    errno = EAGAIN;
    return -1;
  }
  s.table.erase(c);  // a number the kernel hands out again is no longer the old connection
  if (s.table.size() >= s.max_connections && Clock::now() - s.last_purge >= kPurgeEvery) purge(s);
  if (s.table.size() >= s.max_connections ||
      static_cast<uint64_t>(c) + AcceptGuard::kHeadroom >= s.fd_limit) {
    return refuse(c);
  }
  s.table[c] = Entry{inode_of(c), Clock::now()};
  return c;
}

}  // namespace

Status AcceptGuard::arm(const std::string& endpoint, uint64_t max_connections, uint64_t fd_limit) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.armed) return Status::failed_precondition("AcceptGuard is armed already");
  s.ipc_path.clear();
  s.tcp_port = -1;
  if (endpoint.starts_with("ipc://")) {
    s.ipc_path = endpoint.substr(6);
  } else if (endpoint.starts_with("tcp://") && endpoint.rfind(':') > 5) {
    s.tcp_port = std::atoi(endpoint.c_str() + endpoint.rfind(':') + 1);
  } else {
    return Status::invalid_argument("AcceptGuard: endpoint " + endpoint +
                                    " is neither ipc://PATH nor tcp://HOST:PORT");
  }
  s.max_connections = max_connections;
  s.fd_limit = fd_limit;
  s.listener = -1;
  s.table.clear();
  if (s.spare < 0) s.spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
  s.armed = true;
  g_armed.store(true, std::memory_order_release);
  return Status::ok();
}

void AcceptGuard::disarm() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.armed = false;
  g_armed.store(false, std::memory_order_release);
  s.table.clear();
  s.listener = -1;
  if (s.spare >= 0) close(s.spare);
  s.spare = -1;
}

std::vector<AcceptGuard::Connection> AcceptGuard::idle_connections(
    std::chrono::nanoseconds at_least) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  purge(s);
  std::vector<Connection> out;
  const Clock::time_point now = Clock::now();
  for (const auto& [fd, e] : s.table) {
    if (now - e.idle_since >= at_least) out.push_back(Connection{fd, e.inode, e.idle_since});
  }
  return out;
}

void AcceptGuard::touch(int fd) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.table.find(fd);
  if (it != s.table.end()) it->second.idle_since = Clock::now();
}

bool AcceptGuard::shut(const Connection& c) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.table.find(c.fd);
  if (it == s.table.end() || it->second.inode != c.inode || inode_of(c.fd) != c.inode) {
    return false;
  }
  it->second.idle_since = Clock::now();  // not asked again before libzmq has closed it
  return shutdown(c.fd, SHUT_RDWR) == 0;
}

AcceptGuard::Stats AcceptGuard::stats() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.armed) purge(s);
  return Stats{s.table.size(), g_refused.load(std::memory_order_relaxed)};
}

Result<uint64_t> raise_open_files_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return Status::from_errno(errno, "getrlimit(NOFILE)");
  if (r.rlim_cur < r.rlim_max) {
    rlimit raised = r;
    raised.rlim_cur = r.rlim_max;
    // An unlimited hard limit is refused (the kernel caps descriptors at fs.nr_open): keep the
    // soft one then.
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) return static_cast<uint64_t>(raised.rlim_cur);
  }
  return static_cast<uint64_t>(r.rlim_cur);
}

}  // namespace tempokv::service

// libzmq's calls land here (see accept_guard.h): C linkage, the executable's own definitions.
extern "C" int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
  return tempokv::service::guarded_accept(fd, addr, len, flags);
}

extern "C" int accept(int fd, sockaddr* addr, socklen_t* len) {
  return tempokv::service::guarded_accept(fd, addr, len, 0);
}
