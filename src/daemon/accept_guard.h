// AcceptGuard: how many connections tempokvd's ZeroMQ listener may hold, enforced where they are
// accepted. libzmq 4.3 accepts connections on its own I/O thread, holds each in a descriptor
// until the peer leaves, and aborts the whole process (errno_assert in ipc_listener.cpp) when
// accept4() fails with EMFILE; a tcp listener spins on it instead, and the daemon's own opens
// fail meanwhile. So tempokvd defines accept4() and accept() itself (accept_guard.cc), in front
// of libc's, and libzmq's calls land there (a symbol the executable defines comes first for the
// shared libraries it loads). On the listening socket of the armed endpoint:
//
// * a connection beyond `max_connections` (or one whose descriptor would leave fewer than
//   kHeadroom free below the limit) is accepted and closed at once: the peer sees its
//   connection refused, the daemon holds nothing for it;
// * EMFILE and ENFILE never reach libzmq: a spare descriptor kept for the purpose is given up
//   to accept the waiting connection and close it, so the backlog drains instead of spinning;
// * every connection kept is listed (descriptor, socket inode, when it was accepted or its last
//   session ended) for the server to close those that hold no session for too long.
//
// Other listening sockets (the /metrics server's) and every call while disarmed pass straight
// to the kernel. The listed connections are not told apart from a descriptor number reused by
// another file: the inode says whether the entry still is the connection (connections() drops
// those that are not).
//
// Process-wide state: one armed daemon per process. Threading: accept4() runs on libzmq's I/O
// thread, the rest on the daemon's; all of it is safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tempokv/status.h"

namespace tempokv::service {

class AcceptGuard {
 public:
  static constexpr int kHeadroom = 16;  // descriptors always left free below the limit

  struct Connection {
    int fd = -1;
    uint64_t inode = 0;
    // When it was accepted, or when the last session on it ended (steady clock).
    std::chrono::steady_clock::time_point idle_since{};
  };
  struct Stats {
    uint64_t connections = 0;  // listed now
    uint64_t refused = 0;      // accepted and closed at once: over the limit or out of descriptors
  };

  // Guards the listening socket of `endpoint` (ipc://PATH or tcp://HOST:PORT): at most
  // `max_connections` at once, with descriptors below `fd_limit` (RLIMIT_NOFILE's soft limit).
  // Arm before binding. InvalidArgument for another kind of endpoint; FailedPrecondition when
  // already armed.
  static Status arm(const std::string& endpoint, uint64_t max_connections, uint64_t fd_limit);
  // Back to passing every call through; the list is forgotten.
  static void disarm();
  // The listed connections, still what was accepted (the others are dropped), that have been
  // idle (accepted, or their last session ended) for at least `at_least`.
  static std::vector<Connection> idle_connections(std::chrono::nanoseconds at_least);
  // The connection on `fd` has no session since now (its session ended), or has been told to go.
  static void touch(int fd);
  // Shuts the connection down (both ways) when `c.fd` still is it: libzmq then sees the peer
  // gone, closes the descriptor and reports the disconnect. False when it is not there any more.
  static bool shut(const Connection& c);
  static Stats stats();
};

// Raises RLIMIT_NOFILE's soft limit to its hard limit (where the kernel allows it): the soft
// limit now.
Result<uint64_t> raise_open_files_limit();

}  // namespace tempokv::service
