// FileTable: the FileId → file descriptor map of the real SSD engines. Ids are small and reused
// (lowest free first) so that io_uring can use them as indexes into its registered-file table.
// Descriptors are not owned. Thread-safe (one mutex; lookups are short).
#pragma once

#include <mutex>
#include <vector>

#include "ssd/ssd_engine.h"

namespace tempokv {

class FileTable {
 public:
  struct Entry {
    int fd = -1;              // -1: no file under this id
    bool registered = false;  // io_uring: the id is also the fd's slot in the registered files
  };

  // Fails with InvalidArgument when fd < 0.
  Result<FileId> add(int fd);
  // Forgets the id; a later add may reuse it.
  void remove(FileId file);
  void set_registered(FileId file, bool registered);
  // Entry with fd -1 when the id is unknown.
  Entry get(FileId file) const;

 private:
  mutable std::mutex mu_;
  std::vector<Entry> entries_;  // index = FileId
};

}  // namespace tempokv
