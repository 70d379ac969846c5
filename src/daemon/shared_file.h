// The files tempokvd shares with its clients (the tier and the write region, usually on
// /dev/shm, and the ipc socket) and how it keeps them its own: it creates them with O_EXCL, never
// replacing a file it did not make; it names them in DATA_DIR/tempokvd.shared before creating
// them, so the next daemon on the same data directory (after a SIGKILL or a crash) removes
// exactly the files the last one made and nothing else; and it gives them to a configured group
// (mode 0660) or keeps them to its own user (0600).
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
// Gives an existing file (the ipc socket) to `group` with mode 0660.
Status share_with_group(const std::string& path, uint32_t group);
// The group id of a group name or number.
Result<uint32_t> lookup_group(const std::string& name);

// DATA_DIR/tempokvd.shared: the shared files the daemon of DATA_DIR made, one path a line.
std::string shared_record_path(const std::string& data_dir);
// Removes the files the record names (a previous daemon's, dead: the caller holds the lock)
// and the record itself; files already gone are fine.
Status remove_recorded_shared_files(const std::string& data_dir);
// Writes the record (replacing it atomically) before the files are created; FailedPrecondition
// when one of them exists already (it is not the daemon's).
Status record_shared_files(const std::string& data_dir, const std::vector<std::string>& paths);

}  // namespace tempokv::service
