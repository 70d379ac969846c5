// The daemon's data directory (data_dir): the socket, the store, the lock and the record of the
// shared files live there, and the daemon trusts what it finds there (tempokvd.shared names the
// files the next start removes). So it is the daemon's own: created 0700 (0710 and given to
// server.group when the socket is shared, so the group's members reach the socket and list
// nothing), refused when users other than its owner may write in it, and locked for the daemon's
// life so a second daemon cannot scan the store under a live writer or steal its socket. (Its
// group may write in an existing one, as with user-private groups: files planted there are not
// the daemon's user's, and the record of shared files is trusted only when it is.)
//
// Pure functions over the file system; call them from the daemon's start (single thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tempokv/status.h"

namespace tempokv::service {

// Creates `dir` (its parents as the umask makes them) with mode 0700, or 0710 owned by `group`;
// an existing one is used as it is unless anyone may write in it, or it belongs to another user
// than the daemon's (or root): FailedPrecondition naming data_dir and the mode.
Status prepare_data_dir(const std::string& dir, std::optional<uint32_t> group);
// Takes DIR/tempokvd.lock (mode 0600; flock, held until the descriptor is closed and released by
// the kernel even on SIGKILL) and writes the daemon's pid in it: the descriptor to keep open.
// FailedPrecondition naming the other daemon's pid when it is held.
Result<int> lock_data_dir(const std::string& dir);
// A file holding a secret (tokens, a password): a regular file that users other than its owner
// may neither read nor write. InvalidArgument starting with `what` otherwise.
Status check_owner_only_file(const std::string& what, const std::string& path);

}  // namespace tempokv::service
