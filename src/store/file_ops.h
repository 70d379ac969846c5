// FileOps: the store's operations on its directory's names and on segment headers, behind a seam
// (LevelDB's Env idea), so that a test can model what a power cut does to them. The SSD engine
// carries the records; these carry everything else the store does to files: creating a segment
// (create, allocate, header write, data sync), renaming (spare -> segment, -> .reclaimed,
// -> .quarantine), unlinking, and syncing the directory that makes a name durable.
//
// real_file_ops() does the syscalls. A model (store/power_loss_files.h) records them and, at a
// cut, keeps only what a real file system would: names made durable by a directory sync, an
// ordered prefix of the rest; header bytes made durable by a data sync, pages of the rest.
//
// Thread-safe: the store calls these from its loop, creator and unlinker threads.
#pragma once

#include <cstdint>
#include <string>

#include "tempokv/status.h"

namespace tempokv::store {

class FileOps {
 public:
  virtual ~FileOps() = default;
  // Creates path exclusively (O_CREAT | O_EXCL), read-write, O_DIRECT when direct. The fd.
  virtual Result<int> create(const std::string& path, bool direct) = 0;
  // Preallocates bytes (fallocate) of the file created as fd at path.
  virtual Status allocate(int fd, const std::string& path, uint64_t bytes) = 0;
  // Writes len bytes at offset (the whole of them, or an error); buf suits O_DIRECT.
  virtual Status write_at(int fd, const std::string& path, const void* buf, size_t len,
                          uint64_t offset) = 0;
  virtual Status sync_data(int fd, const std::string& path) = 0;  // fdatasync
  virtual Status rename(const std::string& from, const std::string& to) = 0;
  virtual Status unlink(const std::string& path) = 0;
  virtual Status sync_dir(const std::string& dir) = 0;  // makes the names in dir durable
};

// The process-wide real implementation (stateless).
FileOps& real_file_ops();

}  // namespace tempokv::store
