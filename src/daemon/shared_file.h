// The files tempokvd shares with its clients (the tier and the write region, usually on
// /dev/shm, and the ipc socket) and how it keeps them its own: it creates them with O_EXCL, never
// replacing a file it did not make; it names them in DATA_DIR/tempokvd.shared (mode 0600) before
// creating them, so the next daemon on the same data directory (after a SIGKILL or a crash)
// removes exactly the files the last one made and nothing else; and it gives them to a
// configured group (mode 0660) or keeps them to its own user (0600). The record is trusted only
// as far as its own checks go: an entry is removed only when it is a regular file of the
// daemon's user, directly in the directory the daemon makes its shared files in, under a name
// the daemon gives them (anything else is left alone and reported).
//
// Pure functions over the file system; call them from the daemon's start (single thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tempokv/status.h"

namespace tempokv::service {

// Creates `path` read-write (0600, or 0660 owned by `group`); an existing file is
// FailedPrecondition naming it. The caller closes the descriptor.
Result<int> create_shared_file(const std::string& path, std::optional<uint32_t> group);
// Creates the directory `path` for the runtimes' write regions: 0700, or 0710 owned by `group`
// (members enter it to open a region they were told the name of, but cannot list it); an
// existing one is FailedPrecondition naming it.
Status make_shared_dir(const std::string& path, std::optional<uint32_t> group);
// Gives an existing file (the ipc socket) to `group` with mode 0660.
Status share_with_group(const std::string& path, uint32_t group);
// The group id of a group name or number.
Result<uint32_t> lookup_group(const std::string& name);

// DATA_DIR/tempokvd.shared: the shared files the daemon of DATA_DIR made, one path a line.
std::string shared_record_path(const std::string& data_dir);
// Where the daemon makes its shared files: `dir` (tier.dir), under the names it gives them
// (tempokvd-<16 hex digits>-tier / -writes / -keys) or `tier_name` (tier.path's file name, "" for none).
// An empty `dir` stands for any directory, for a spawner that does not know the daemon's
// configuration (SpawnedDaemon cleaning up after a daemon it killed): the names must match.
struct SharedFilePlace {
  std::string dir;
  std::string tier_name;
  // Whether `path` could be one of the daemon's shared files (by its name and directory).
  bool holds(const std::string& path) const;
};
// Removes the files the record names (a previous daemon's, dead: the caller holds the lock) and
// the record itself; files already gone are fine. An entry `place` does not hold, or that is not
// a regular file of this user, is left alone, and so is the whole record when it is not a
// regular file of this user that only this user may write: each such refusal is returned, a
// line saying what was kept and why.
Result<std::vector<std::string>> remove_recorded_shared_files(const std::string& data_dir,
                                                              const SharedFilePlace& place);
// Writes the record (replacing it atomically, mode 0600) before the files are created;
// FailedPrecondition when one of them exists already (it is not the daemon's).
Status record_shared_files(const std::string& data_dir, const std::vector<std::string>& paths);
// A dax tier's device: `path` resolved (symbolic links and `..` followed) must be a character
// device directly in /dev named dax*; the resolved path. The daemon never creates or sizes it.
Result<std::string> resolve_dax_device(const std::string& path);

}  // namespace tempokv::service
