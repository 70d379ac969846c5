// One cluster node's connection and the raw socket I/O of the data path (internal to
// src/remote). Every read and write waits with poll() against one deadline, so a call is bounded
// as a whole however the bytes trickle in.
#pragma once

#include <hiredis/hiredis.h>
#include <sys/uio.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "remote/remote_client.h"
#include "tempokv/status.h"

namespace tempokv::remote {

using Clock = std::chrono::steady_clock;

// Redis errors and redirects: "-MOVED 3999 127.0.0.1:6381", "-ASK ...", "-OOM ...".
struct RedirectLine {
  enum Kind { kNone, kMoved, kAsk } kind = kNone;
  std::string address;
};
RedirectLine parse_redirect(std::string_view error_text);

// Socket reads of one reply with leftovers: the reply's first line is read in small pieces and
// what came after it is handed out before the socket is read again.
class ReplyReader {
 public:
  ReplyReader(int fd, Clock::time_point deadline) : fd_(fd), deadline_(deadline) {}
  // The line up to "\r\n" (not included). IOError/Unavailable on EOF, error or deadline.
  Status read_line(std::string* line);
  // Exactly bytes into dst (leftovers first, then recv straight into dst).
  Status read_exact(void* dst, size_t bytes);

 private:
  // Some bytes (at most max) into dst, waiting for them until the deadline; IOError with the
  // message closed on EOF.
  Status recv_some(void* dst, size_t max, size_t* got, const char* closed);
  int fd_;
  Clock::time_point deadline_;
  char buf_[512];
  size_t begin_ = 0, end_ = 0;
};

// Writes every byte of iov (modified) before the deadline.
Status write_all(int fd, iovec* iov, int iovcnt, Clock::time_point deadline);

// The RESP header of a command: "*<argc>\r\n" then each argument as "$<n>\r\n<arg>\r\n", the
// last argument's bytes left out (appended by the caller from its own buffers) when
// last_bytes is given.
std::string resp_prefix(const std::vector<std::string_view>& args, size_t last_bytes);

// A command through hiredis (bounded by the context's timeout); Unavailable when no reply came.
Result<CommandReply> run_command(redisContext* c, const std::vector<std::string_view>& argv);

struct RemoteClient::Node {
  std::string address, host;
  int port = 0;
  redisContext* ctx = nullptr;  // nullptr until connected, and after an error
  NodeStats stats;
  ~Node() {
    if (ctx) redisFree(ctx);
  }
};

}  // namespace tempokv::remote
