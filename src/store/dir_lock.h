// The store directory's LOCK file: one writer (an exclusive flock) or any number of read-only
// inspectors (shared flocks), never both. flock is per open file description, so two opens in
// one process conflict just as two processes do.
#pragma once

#include <string>

#include "tempokv/status.h"

namespace tempokv::store {

enum class LockMode { kExclusive, kShared };

// Takes dir/LOCK without waiting. kExclusive creates the file; kShared never writes anything and
// returns -1 (no lock) when no writer ever created the file. FailedPrecondition, naming the
// directory, when the other mode holds it. Returns the descriptor; closing it releases the lock.
Result<int> lock_store_dir(const std::string& dir, LockMode mode);

}  // namespace tempokv::store
